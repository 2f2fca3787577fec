"""What `trove history search|read` and `trove notes` print, from files alone.

Each helper reads the thread's log (`engine.log.read_events`, read-only) and
opens its archive read-only, then returns exactly the JSON object the matching
model tool returns, so scripts and the model share one contract. Nothing here
creates or modifies a file: a thread without an archive reads as having none.
A log with a bad line is read up to it (its consistent prefix, as every
reader does) and the line is passed to `report`, so the CLI can say so; a
log that cannot be read raises OSError (`engine.session.ThreadNotFoundError`
for a bad id).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.config import TaskContinuityConfig
from engine.continuity.archive.extract import hidden_seqs, surface_inputs
from engine.continuity.archive.status import scope_binding
from engine.continuity.archive.store import ArchiveStore, archive_path
from engine.continuity.context import Snapshot
from engine.continuity.notes.notebook import notebook_report
from engine.continuity.tools import read_result, search_result
from engine.log import read_events
from engine.log.line import current_line
from engine.surface import Surface
from engine.threads.paths import LOG_NAME, ThreadNotFoundError, has_log, thread_dir

Report = Callable[[str], None]
"""Told, in one line, that the log has a bad line and what was read instead."""


def thread_snapshot(
    home: Path,
    user_id: str,
    thread_id: str,
    config: TaskContinuityConfig | None = None,
    *,
    report: Report | None = None,
) -> Snapshot:
    """The thread's state at the end of its log (or of its consistent prefix, `report`
    told why), with its archive opened read-only."""
    directory = thread_dir(home, user_id, thread_id)
    log_path = directory / LOG_NAME
    if not has_log(directory):
        raise ThreadNotFoundError(f"no thread {thread_id!r} for user {user_id!r}")
    loaded = read_events(log_path)
    if loaded.damage is not None and report is not None:
        count = len(loaded.events)
        report(
            f"{loaded.damage}; read the {count} event{'' if count == 1 else 's'} before it "
            f"(trove doctor {thread_id} repairs the log)"
        )
    events = current_line(loaded.events)  # a rewound thread: its line
    surface = Surface.from_events(events)
    active = surface_inputs(surface.entries, hidden_seqs(events))
    scope = scope_binding(user_id, thread_id)
    store = ArchiveStore(
        archive_path(directory), config or TaskContinuityConfig(), readonly=True, scope=scope
    )
    return Snapshot(events, active, scope, store, line=events)


def cli_search(
    home: Path,
    user_id: str,
    thread_id: str,
    query: str,
    role: str | None = None,
    *,
    report: Report | None = None,
) -> dict[str, Any]:
    """`trove history search QUERY [--role R] --json`: the history_search result."""
    snapshot = thread_snapshot(home, user_id, thread_id, report=report)
    args: dict[str, Any] = {"query": query}
    if role is not None:
        args["role"] = role
    try:
        return search_result(snapshot, args)
    finally:
        _close(snapshot)


def cli_read(
    home: Path,
    user_id: str,
    thread_id: str,
    source_id: str,
    offset: int = 0,
    *,
    report: Report | None = None,
) -> dict[str, Any]:
    """`trove history read ID [--offset N] --json`: the history_read result."""
    snapshot = thread_snapshot(home, user_id, thread_id, report=report)
    try:
        return read_result(snapshot, {"source_id": source_id, "offset": offset})
    finally:
        _close(snapshot)


def cli_notes(
    home: Path, user_id: str, thread_id: str, *, report: Report | None = None
) -> dict[str, Any]:
    """`trove notes --json`: notes with each citation's status, and the history status."""
    snapshot = thread_snapshot(home, user_id, thread_id, report=report)
    try:
        return notebook_report(snapshot)
    finally:
        _close(snapshot)


def _close(snapshot: Snapshot) -> None:
    if snapshot.store is not None:
        snapshot.store.close()


def render_search(result: dict[str, Any]) -> str:
    """Plain-text form of a search result for humans (without --json)."""
    if result.get("status") == "error":
        return f"error: {result.get('message')}"
    lines = [
        f"history: {result['status']}" + (f" ({result['detail']})" if "detail" in result else "")
    ]
    if not result.get("results"):
        lines.append(result.get("message", "no matches"))
    for item in result.get("results", []):
        where = f"batch {item['batch']}" if item["batch"] is not None else "active"
        mark = " [truncated]" if item["truncated"] else ""
        lines.append(f"{item['id']}  {item['role']}  {where}  seq {item['seq']}{mark}")
        lines.extend("    " + line for line in item["excerpt"].splitlines() or [""])
    return "\n".join(lines)


def render_read(result: dict[str, Any]) -> str:
    """Plain-text form of one page: the text, then where to continue."""
    if result.get("status") == "error":
        return f"error: {result.get('message')}"
    tail = []
    if result["truncated"]:
        tail.append("[the archived copy of this source was truncated]")
    if result["next_offset"] is not None:
        tail.append(f"[more: --offset {result['next_offset']}]")
    return "\n".join([result["text"], *tail])


def render_notes(report: dict[str, Any]) -> str:
    """Plain-text form of the notebook with citation statuses."""
    lines = [f"history: {report['history']['status']}"]
    if not report["notes"]:
        lines.append("no task notes")
    for note in report["notes"]:
        lines.append(f"{note['key']}: {note['content']}")
        for citation in note["citations"]:
            lines.append(f"    cites {citation['id']} ({citation['status']})")
    return "\n".join(lines)


def render_search_all(result: dict[str, Any], when: Callable[[str], str]) -> str:
    """Plain-text form of `search --all`: one block per thread with hits, then problems.

    `when` turns a log `ts` into the date shown (the front end's local time).
    """
    groups = result["threads"]
    searched = result["threads_searched"]
    left = result.get("threads_not_searched") or 0
    lines = [
        f"searched {searched} thread{'' if searched == 1 else 's'}: "
        + (f"matches in {len(groups)}" if groups else "no matches")
    ]
    if left:
        lines.append(
            f"stopped at {len(groups)} threads with matches; {left} older "
            f"thread{'' if left == 1 else 's'} not searched (--max-threads N, 0: all)"
        )
    for group in groups:
        lines.append("")
        lines.append(f"thread {group['thread']}  {when(group['last_activity'])}  {group['title']}")
        lines.extend("  " + line for line in render_search(group).splitlines())
    for problem in result["problems"]:
        lines.append(f"skipped or partly read: thread {problem['thread']}: {problem['problem']}")
    return "\n".join(lines)
