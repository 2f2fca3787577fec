"""One writer per thread: an OS lock held for the life of the process that writes.

Two writers would hand out the same seqs and replace the same messages twice, so
opening a thread for writing takes an exclusive `flock` until it is closed; the
kernel drops it when the process dies, so a crash never leaves a thread locked.
Readers never take it.

The lock is on the thread's directory, not a file beside the log: a file can be
deleted or replaced while its holder runs, and the next writer would lock a new
inode. After the flock the path is checked to still name the locked inode.
`session.lock` is taken too and holds the holder's pid and host, so a second writer
can say who has the thread; where a file system cannot lock a directory (NFS) it
alone is the lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
from pathlib import Path

from engine.errors import TroveError
from engine.util.private import open_derived

LOCK_NAME = "session.lock"
_ATTEMPTS = 8
"""How many times a lock is retaken when its path was replaced under it."""


class ThreadLockedError(TroveError):
    """Another live process writes this thread; str(e) names it in one line."""

    def __init__(self, thread_id: str, holder: str) -> None:
        self.thread_id = thread_id
        self.holder = holder
        super().__init__(
            f"thread {thread_id} is open in another Trove process ({holder}); "
            "close it there, or open a new thread"
        )


_HEAD_BYTES = 256
"""What a lock file is read of: the pid and host at its head (a file grown huge, or a FIFO
or a link under its name, is never read whole or waited on)."""


def _holder_in_file(path: Path) -> str | None:
    try:
        with open_derived(path, 1 << 62) as fh:
            text = fh.read(_HEAD_BYTES).decode("utf-8", errors="replace").split()
    except OSError:
        return None
    if len(text) >= 2 and text[0].isdigit():
        host = "" if text[1] == socket.gethostname() else f" on {text[1]}"
        return f"pid {text[0]}{host}"
    return None


def _holder_in_kernel(info: os.stat_result) -> str | None:
    """The pid the kernel lists as holding a flock on this inode (Linux `/proc/locks`).

    The truth even when `session.lock` was deleted or replaced. Matched on the
    inode, and on the device where it agrees (some file systems stat with
    another device number than the one the kernel lists)."""
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}"
    found: list[tuple[bool, str]] = []
    for line in lines:
        parts = line.split()
        if len(parts) < 6 or parts[1] != "FLOCK" or not parts[4].isdigit():
            continue  # another kind of lock, or a waiter ("->")
        where = parts[5].rsplit(":", 1)
        if len(where) == 2 and where[1] == str(info.st_ino):
            found.append((where[0] == device, parts[4]))
    exact = [pid for same, pid in found if same]
    if len(exact) == 1 or (not exact and len(found) == 1):
        return f"pid {(exact or [found[0][1]])[0]}"
    return None


def _holder(directory: Path, locked: os.stat_result | None) -> str:
    """Who has the thread, as well as can be told: the kernel's word, else the file's."""
    if locked is not None:
        named = _holder_in_kernel(locked)
        if named is not None:
            return named
    return _holder_in_file(directory / LOCK_NAME) or "pid unknown"


def _same(fd: int, path: Path) -> bool:
    """Whether `path` still names the inode open as `fd`."""
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _flock(fd: int) -> bool:
    """Take the exclusive lock without waiting; False when another holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _replaced(path: Path) -> OSError:
    return OSError(errno.EAGAIN, "replaced again and again while being locked", str(path))


def _lock_directory(directory: Path, thread_id: str) -> int | None:
    """The locked directory's descriptor; None where the file system cannot lock one."""
    for _ in range(_ATTEMPTS):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if not _flock(fd):
                raise ThreadLockedError(thread_id, _holder(directory, os.fstat(fd)))
            if _same(fd, directory):
                return fd
        except ThreadLockedError:
            os.close(fd)
            raise
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EBADF, errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                return None
            raise
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # replaced between the open and the lock: take the new one
    raise _replaced(directory)


def _lock_file(path: Path, thread_id: str) -> int:
    """The locked `session.lock`'s descriptor, the holder's pid and host written in it."""
    for _ in range(_ATTEMPTS):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if not _flock(fd):
                raise ThreadLockedError(thread_id, _holder_in_file(path) or "pid unknown")
            if _same(fd, path):
                # Who holds it, for the next process that asks; best effort (a full
                # disk must not keep the thread from opening).
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # deleted or replaced between the open and the lock
    raise _replaced(path)


class ThreadLock:
    """The held lock; `release()` is idempotent."""

    def __init__(self, fds: list[int], path: Path) -> None:
        self._fds: list[int] | None = fds
        self.path = path

    @classmethod
    def acquire(cls, directory: Path, thread_id: str) -> ThreadLock:
        """Take the lock without waiting, or raise ThreadLockedError naming the holder."""
        held = _lock_directory(directory, thread_id)
        try:
            fds = [_lock_file(directory / LOCK_NAME, thread_id)]
        except BaseException:
            if held is not None:
                os.close(held)
            raise
        if held is not None:
            fds.append(held)
        return cls(fds, directory / LOCK_NAME)

    @property
    def held(self) -> bool:
        return self._fds is not None

    def release(self) -> None:
        if self._fds is not None:
            fds, self._fds = self._fds, None
            for fd in fds:
                os.close(fd)  # closing the descriptor drops its flock
