"""The archive file: where it lives, making it, opening it (URI modes, read stamp, WAL, modes).

A read-only store writes nothing, not even `-wal`/`-shm`: when no `-wal`
exists, everything committed is in the main file, so it is opened
`immutable=1` (no lock, no shared memory) and the caller checks afterwards,
with `file_stamp`, that the file did not change under the read; otherwise it
is opened `mode=ro`, which uses the `-wal`/`-shm` a live writer already has.

A new file is made whole under a name of its own and hard-linked into place
(`create`), so a competing writer, or a reader, finds either no file or a
complete one, never one half made.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import sqlite3
import stat
from pathlib import Path

from engine.continuity.archive.schema import ArchiveUnavailableError, migrate
from engine.util.private import open_private, tighten

BUSY_TIMEOUT_MS = 10_000
ARCHIVE_DIR = "task-history"
ARCHIVE_NAME = "history.sqlite"

Stamp = tuple[int, int, int]


def archive_path(thread_dir: Path) -> Path:
    """`<thread dir>/task-history/history.sqlite`, beside the session log."""
    return thread_dir / ARCHIVE_DIR / ARCHIVE_NAME


_NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS})


def present(path: Path) -> bool:
    """Whether an archive file is at `path`: a regular file, or a link to one.

    Anything else under the name (a FIFO, a device, a link to one, to nothing
    or to itself) raises `ArchiveUnavailableError`: it is never opened. A
    file that a competing writer links into place between the two looks
    below is found, not taken for a link to nothing.
    """
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        try:
            info = os.lstat(path)  # a link to nothing, or a file put there since
        except (FileNotFoundError, NotADirectoryError):
            return False
    except OSError as exc:
        raise ArchiveUnavailableError(f"{path}: cannot look at the archive: {exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise ArchiveUnavailableError(f"{path}: not a regular file; it is not read")
    return True


def create(path: Path, scope: str | None) -> None:
    """Put a new archive at `path` unless another writer's is there first; either way
    something is at `path` afterwards, for `present` to judge.

    The file gets its schema, application_id and scope under a name of its own
    (made with O_EXCL: never through a link or a FIFO), then is hard-linked to
    `path`. A link never replaces: the loser of a race finds the winner's
    file, complete, and its own goes. Where the file system has no hard
    links, an empty file is made in place (O_EXCL) and the capture's `migrate`
    gives it the schema; its steps serialize with a competing writer's.
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    os.close(open_private(temporary, os.O_WRONLY | os.O_EXCL))
    try:
        conn = connect(temporary, "rw")
        try:
            migrate(conn, temporary, scope)
        finally:
            conn.close()
        try:
            os.link(temporary, path, follow_symlinks=False)
        except FileExistsError:
            pass  # a competing writer's file came first: it is the one opened
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            with contextlib.suppress(FileExistsError):
                os.close(open_private(path, os.O_WRONLY | os.O_EXCL))
    finally:
        for name in (temporary, temporary.with_name(temporary.name + "-journal")):
            with contextlib.suppress(OSError):
                name.unlink()


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
