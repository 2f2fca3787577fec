"""Where a thread lives: its id, its directory under the user's, its log's name."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

from engine.errors import TroveError

THREAD_ID = re.compile(r"[A-Za-z0-9._-]{1,80}")
LOG_NAME = "session.jsonl"


class ThreadNotFoundError(TroveError):
    """A --thread that names nothing: a usage error, not a new thread."""


def user_dir(home: Path, user_id: str) -> Path:
    return home / "users" / user_id


def thread_dir(home: Path, user_id: str, thread_id: str) -> Path:
    if not THREAD_ID.fullmatch(thread_id) or thread_id in (".", ".."):
        raise ThreadNotFoundError(f"invalid thread id {thread_id!r}")
    return user_dir(home, user_id) / "threads" / thread_id


def has_log(directory: Path) -> bool:
    """Whether the thread's directory has its log: anything under the log's name counts
    (a FIFO, a link: the readers report it, the writer's open moves it aside), so a
    thread whose log was damaged that way is still found, not taken for none."""
    return os.path.lexists(directory / LOG_NAME)


def new_thread_id(now: datetime | None = None) -> str:
    """Sortable by creation time, unique without coordination."""
    moment = now or datetime.now(UTC)
    return moment.strftime("%Y%m%d-%H%M%S-") + os.urandom(2).hex()
