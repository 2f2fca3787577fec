"""The archive file: where it lives, and opening it (URI modes, read stamp, WAL, private modes).

A read-only store writes nothing, not even `-wal`/`-shm`: when no `-wal`
exists, everything committed is in the main file, so it is opened
`immutable=1` (no lock, no shared memory) and the caller checks afterwards,
with `file_stamp`, that the file did not change under the read; otherwise it
is opened `mode=ro`, which uses the `-wal`/`-shm` a live writer already has.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from engine.util.private import tighten

BUSY_TIMEOUT_MS = 10_000
ARCHIVE_DIR = "task-history"
ARCHIVE_NAME = "history.sqlite"

Stamp = tuple[int, int, int]


def archive_path(thread_dir: Path) -> Path:
    """`<thread dir>/task-history/history.sqlite`, beside the session log."""
    return thread_dir / ARCHIVE_DIR / ARCHIVE_NAME


def connect(path: Path, mode: str) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), usable from any thread."""
    uri = path.resolve().as_uri() + f"?mode={mode}"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def file_stamp(path: Path) -> Stamp | None:
    """What changes when anyone writes the main file; None once a -wal exists."""
    if os.path.exists(f"{path}-wal"):
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def read_mode(path: Path, *, readonly: bool, shared: bool) -> tuple[str, Stamp | None]:
    """The URI mode for reading, and the stamp to check afterwards (None: no check needed).

    `shared` once a writer was seen: from then on its -wal/-shm are used.
    """
    if not readonly:
        return "rw", None
    if not shared:
        stamp = file_stamp(path)
        if stamp is not None:
            return "ro&immutable=1", stamp
    return "ro", None


def make_private(path: Path) -> None:
    """Tighten an archive an older version left readable, before SQLite opens it."""
    tighten(path.parent)
    for suffix in ("", "-wal", "-shm"):
        tighten(path.with_name(path.name + suffix))


def ensure_wal(conn: sqlite3.Connection) -> None:
    """Switch a new file to WAL; a competing writer doing the same may hold the lock.

    Changing the journal mode needs an exclusive lock and does not wait for
    it, so when two first captures race, the loser leaves the switch to the
    winner (its capture still serializes on BEGIN IMMEDIATE).
    """
    try:
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
    except sqlite3.OperationalError:
        pass
