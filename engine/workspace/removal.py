"""Deleting a thread: its directory, which holds its log and its archive (DESIGN: deleting a
thread removes its directory), only while no other process writes it."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine.threads.lock import ThreadLock
from engine.threads.paths import ThreadNotFoundError, has_log, thread_dir


def remove_thread(home: Path, user_id: str, thread_id: str) -> None:
    """Take the thread's writer lock, then remove its directory; blocking file I/O.

    Raises ThreadLockedError when another process has the thread open (nothing is
    removed), ThreadNotFoundError when there is no such thread, OSError when the
    removal fails part-way (what is left stays where it was).
    """
    directory = thread_dir(home, user_id, thread_id)
    if not directory.is_dir() or not has_log(directory):
        raise ThreadNotFoundError(f"no thread {thread_id!r} for user {user_id!r}")
    lock = ThreadLock.acquire(directory, thread_id)
    try:
        shutil.rmtree(directory)
    finally:
        lock.release()
