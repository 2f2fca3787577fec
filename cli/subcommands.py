"""`trove threads`, `trove history …`, `trove notes`: read-only views, no model; and
`trove doctor`, which repairs a thread's log when it can take the thread.

What they print comes from logs and archives, so it is text for a terminal
made safe: human output through `safe_text`, `--json` with every control
escaped (the decoded value is still exactly the tool's).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.config import Config
from engine.util.safe_text import safe_json, safe_text
from engine.util.times import local_time
from engine.workspace.listing import ThreadInfo, list_threads


def list_threads_command(config: Config, home: Path, *, as_json: bool = False) -> int:
    """Each thread's number (what `--thread N` takes), title, message count, compactions
    and when a message was last written, that newest first; `[-p]` marks a thread
    `trove -p` began.

    `--json` prints a list of objects: `{"id", "title", "messages", "compactions",
    "last_activity", "last_message", "modified", "one_shot", "problem"}`: `problem`
    names the bad line of a damaged log (`session.jsonl:LINE: what`; the counts are of
    the lines before it, what loads), or says why the log cannot be read (counts null). Nothing
    is changed on disk.
    """
    threads = list_threads(home, config.user_id)
    if as_json:
        print(safe_json([_thread_object(info) for info in threads]))
        return 0
    if not threads:
        print(f"no threads for user {config.user_id!r} in {home}")
        return 0
    for number, info in enumerate(threads, 1):  # the number `--thread N` takes
        stamp = info.changed.astimezone().strftime("%Y-%m-%d %H:%M")
        if info.messages is None:  # unreadable: nothing to count
            line = f"{number:>3}  {info.id}  {stamp}  {info.title}  [damaged: {info.problem}]"
            print(safe_text(line))
            continue
        messages = _plural(info.messages, "message")
        counts = f"{messages}, {_plural(info.compactions or 0, 'compaction')}"
        line = f"{number:>3}  {info.id}  {stamp}  {counts:28}  {info.title}"
        if info.one_shot:
            line += "  [-p]"
        if info.problem:
            line += f"  [damaged: {info.problem}; trove doctor {info.id} repairs it]"
        print(safe_text(line))
    return 0


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _thread_object(info: ThreadInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "title": info.title,
        "messages": info.messages,
        "compactions": info.compactions,
        "last_activity": info.last_activity or None,
        "last_message": info.last_message or None,
        "modified": info.modified.isoformat(),
        "one_shot": info.one_shot,
        "problem": info.problem,
    }


def search_all_command(args: argparse.Namespace, config: Config, home: Path) -> int:
    """`history search QUERY --all`: every thread of the user, grouped by thread."""
    from engine.workspace.reports import render_search_all
    from engine.workspace.search_all import MAX_THREADS, search_all

    limit = MAX_THREADS if args.max_threads is None else args.max_threads
    result = search_all(home, config.user_id, args.query, args.role, max_threads=limit)
    if result.get("status") == "error":  # the tool's own invalid_arguments
        return _bad_usage(result, as_json=args.json)
    if args.json:
        print(safe_json(result))
    else:
        print(safe_text(render_search_all(result, local_time)))
    return 0


def archive_command(args: argparse.Namespace, config: Config, home: Path) -> int:
    """history search / history read / notes: exactly the tool's JSON with --json."""
    from engine.threads.paths import ThreadNotFoundError
    from engine.workspace.listing import latest_thread
    from engine.workspace.reports import (
        cli_notes,
        cli_read,
        cli_search,
        render_notes,
        render_read,
        render_search,
    )

    searching = args.command == "history" and args.history_command == "search"
    if searching and args.max_threads is not None and not args.all:
        print("trove: --max-threads goes with --all", file=sys.stderr)
        return 2
    if searching and args.all:
        if args.thread:
            print("trove: --all searches every thread; leave out --thread", file=sys.stderr)
            return 2
        return search_all_command(args, config, home)
    reading = args.command == "history" and args.history_command == "read"
    if reading and not args.thread:
        return read_anywhere(args, config, home)
    thread_id = args.thread or latest_thread(home, config.user_id)
    if thread_id is None:
        raise ThreadNotFoundError(f"no threads for user {config.user_id!r} in {home}")
    render: Callable[[dict[str, Any]], str]

    def report(text: str) -> None:  # a damaged log: read up to its bad line, said once
        print(f"trove: {safe_text(text)}", file=sys.stderr)

    if args.command == "notes":
        result = cli_notes(home, config.user_id, thread_id, report=report)
        render = render_notes
    elif args.history_command == "search":
        result = cli_search(home, config.user_id, thread_id, args.query, args.role, report=report)
        render = render_search
    else:
        if args.offset < 0:
            print("trove: --offset must be 0 or more", file=sys.stderr)
            return 2
        result = cli_read(
            home, config.user_id, thread_id, args.source_id, args.offset, report=report
        )
        render = render_read
    if result.get("error") == "invalid_arguments":  # what was asked is malformed: usage
        return _bad_usage(result, as_json=args.json)
    if args.json:
        print(safe_json(result))  # exactly the tool's JSON, which thread or not
    else:
        # Which thread was looked in: without --thread it is a choice made here. A page
        # that was found is printed as it is (the source's own text, fit to pipe).
        page = args.command == "history" and result.get("status") != "error"
        page = page and args.history_command == "read"
        where = "" if page else f"thread {thread_id}: "
        print(safe_text(where + render(result)))
    return 1 if result.get("status") == "error" else 0


def read_anywhere(args: argparse.Namespace, config: Config, home: Path) -> int:
    """`history read ID` without `--thread`: the page from whichever of the user's threads
    holds the source (engine.workspace.find_source), as if `--thread` had named it."""
    from engine.workspace.find_source import threads_holding
    from engine.workspace.reports import cli_read, render_read

    if args.offset < 0:
        print("trove: --offset must be 0 or more", file=sys.stderr)
        return 2
    result: dict[str, Any] = {}
    for thread_id in threads_holding(home, config.user_id, args.source_id):
        result = cli_read(home, config.user_id, thread_id, args.source_id, args.offset)
        if result.get("status") != "error" or result.get("error") == "invalid_offset":
            break
    else:
        probe = cli_read_probe(args.source_id)
        if probe is not None:  # a malformed id: the tool's own answer, as with --thread
            return _bad_usage(probe, as_json=args.json)
        message = f"no thread of user {config.user_id!r} holds source {args.source_id}"
        result = {"status": "error", "error": "source_unavailable", "message": message}
    if result.get("error") == "invalid_arguments":
        return _bad_usage(result, as_json=args.json)
    print(safe_json(result) if args.json else safe_text(render_read(result)))
    return 1 if result.get("status") == "error" else 0


def cli_read_probe(source_id: str) -> dict[str, Any] | None:
    """The read tool's refusal of a malformed id, checked without any thread (None: well
    formed)."""
    from engine.continuity.context import Snapshot
    from engine.continuity.tools import read_result

    result = read_result(Snapshot([], [], "", None), {"source_id": source_id, "offset": 0})
    return result if result.get("error") == "invalid_arguments" else None


def _bad_usage(result: dict[str, Any], *, as_json: bool) -> int:
    """A tool's refusal of what was asked: its JSON as is, or its message in one line; exit 2."""
    if as_json:
        print(safe_json(result))
    else:
        print(safe_text(f"trove: {result.get('message')}"), file=sys.stderr)
    return 2


def doctor_command(args: argparse.Namespace, config: Config, home: Path) -> int:
    """`trove doctor THREAD [--json]`: what is wrong with the thread's files, repaired when
    no other process has the thread (engine.workspace.doctor). Exit 0 healthy or repaired, 1 not
    repaired (one line on stderr says why), 2 no thread named."""
    from engine.workspace.doctor import examine

    named = [name for name in (args.doctor_thread, args.thread) if name]
    if not named or len(set(named)) > 1:
        why = "names two threads" if named else "needs a thread: trove doctor THREAD"
        print(f"trove: doctor {why}", file=sys.stderr)
        return 2
    checkup = examine(home, config.user_id, named[0])
    if args.json:
        print(safe_json(checkup.as_json()))
    else:
        head = f"thread {checkup.thread}: {checkup.status}"
        if checkup.held_by is not None:
            head += f" (open in another Trove process, {checkup.held_by}: nothing changed)"
        lines = [head]
        for finding in checkup.findings:
            done = f"; repaired: {finding.repaired}" if finding.repaired else ""
            lines.append(f"  {finding.problem}{done}")
        if checkup.kept:
            lines.append(f"  kept beside the log: {', '.join(checkup.kept)}")
        print(safe_text("\n".join(lines)))
    if checkup.status == "damaged":
        why = f"it is open in another Trove process ({checkup.held_by}); close it there"
        if checkup.held_by is None:
            why = "the repair did not take"
        print(f"trove: thread {checkup.thread} not repaired: {safe_text(why)}", file=sys.stderr)
        return 1
    return 0
