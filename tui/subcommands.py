"""`trove threads`, `trove history …`, `trove notes`: read-only views, no model.

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
from engine.safe_text import safe_json, safe_text
from engine.session import list_threads


def list_threads_command(config: Config, home: Path) -> int:
    threads = list_threads(home, config.user_id, verify=True)
    if not threads:
        print(f"no threads for user {config.user_id!r} in {home}")
        return 0
    for info in threads:
        stamp = info.modified.astimezone().strftime("%Y-%m-%d %H:%M")
        damaged = f"  [damaged: {info.problem}]" if info.problem else ""
        print(safe_text(f"{info.id}  {stamp}  {info.title}{damaged}"))
    return 0


def archive_command(args: argparse.Namespace, config: Config, home: Path) -> int:
    """history search / history read / notes: exactly the tool's JSON with --json."""
    from engine.continuity.cli import (
        cli_notes,
        cli_read,
        cli_search,
        render_notes,
        render_read,
        render_search,
    )
    from engine.session import ThreadNotFoundError, latest_thread

    thread_id = args.thread or latest_thread(home, config.user_id)
    if thread_id is None:
        raise ThreadNotFoundError(f"no threads for user {config.user_id!r} in {home}")
    render: Callable[[dict[str, Any]], str]
    if args.command == "notes":
        result = cli_notes(home, config.user_id, thread_id)
        render = render_notes
    elif args.history_command == "search":
        result = cli_search(home, config.user_id, thread_id, args.query, args.role)
        render = render_search
    else:
        if args.offset < 0:
            print("trove: --offset must be 0 or more", file=sys.stderr)
            return 2
        result = cli_read(home, config.user_id, thread_id, args.source_id, args.offset)
        render = render_read
    if result.get("error") == "invalid_arguments":  # what was asked is malformed: usage
        if args.json:
            print(safe_json(result))
        else:
            print(safe_text(f"trove: {result.get('message')}"), file=sys.stderr)
        return 2
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
