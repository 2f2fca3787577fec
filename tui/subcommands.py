"""`trove threads`, `trove history …`, `trove notes`: read-only views, no model."""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.config import Config
from engine.session import list_threads


def list_threads_command(config: Config, home: Path) -> int:
    threads = list_threads(home, config.user_id)
    if not threads:
        print(f"no threads for user {config.user_id!r} in {home}")
        return 0
    for info in threads:
        stamp = info.modified.astimezone().strftime("%Y-%m-%d %H:%M")
        print(f"{info.id}  {stamp}  {info.title}")
    return 0


def archive_command(args: argparse.Namespace, config: Config, home: Path) -> int:
    import sys

    print("trove: the task-continuity archive is not available in this build", file=sys.stderr)
    return 1
