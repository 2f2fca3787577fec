"""One writer per thread: an OS lock held for the life of the process that writes.

Two processes appending to one log would hand out the same seqs and leave a
thread that no longer loads, and two compactions would each replace the same
messages. So opening a thread for writing takes an exclusive `flock` on
`session.lock` beside the log, and keeps it until the thread is closed. The
kernel drops it when the process dies, kill -9 included, so a crash never
leaves a thread locked. Readers (history, notes, threads, the inspector)
never take it.

The lock file holds the holder's pid and host, so the second writer can say
who has the thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from pathlib import Path

LOCK_NAME = "session.lock"


class ThreadLockedError(Exception):
    """Another live process writes this thread; str(e) names it in one line."""

    def __init__(self, thread_id: str, holder: str) -> None:
        self.thread_id = thread_id
        self.holder = holder
        super().__init__(
            f"thread {thread_id} is open in another Trove process ({holder}); "
            "close it there, or open a new thread"
        )


def _holder_of(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        text = []
    if len(text) >= 2 and text[0].isdigit():
        host = "" if text[1] == socket.gethostname() else f" on {text[1]}"
        return f"pid {text[0]}{host}"
    return "pid unknown"


class ThreadLock:
    """The held lock; `release()` is idempotent."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def acquire(cls, directory: Path, thread_id: str) -> ThreadLock:
        """Take the lock without waiting, or raise ThreadLockedError naming the holder."""
        path = directory / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ThreadLockedError(thread_id, _holder_of(path)) from None
        except BaseException:
            os.close(fd)
            raise
        # Who holds it, for the next process that asks; best effort (a full
        # disk must not keep the thread from opening).
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        return cls(fd, path)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor drops the flock
