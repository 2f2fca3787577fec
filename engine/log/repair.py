"""The writer's repairs of a log found damaged: bytes set aside beside it, never dropped.

A torn last line is copied aside before it is cut (`torn_copy`); a bad line and all
after it are moved into a quarantine file (`quarantine`); something other than a
regular file under the log's name is renamed aside whole (`move_aside`). The caches
that stand for bytes about to be cut are removed first (the replay snapshot and the
resume index).
"""

from __future__ import annotations

import contextlib
import os
from datetime import datetime
from pathlib import Path

from engine.log import resume, snapshot
from engine.log.log_file import copy_range, open_log
from engine.util.private import open_private


def torn_copy(path: Path, seq: int) -> Path:
    """A new file for torn bytes; an earlier crash's copy is never overwritten."""
    keep = path.with_name(f"{path.name}.torn-{seq}")
    attempt = 1
    while keep.exists():
        attempt += 1
        keep = path.with_name(f"{path.name}.torn-{seq}.{attempt}")
    return keep


def cut_torn(path: Path, good_bytes: int, seq: int) -> Path:
    """Copy the torn bytes after `good_bytes` into a new file beside the log (`torn_copy`,
    for the line that would have been `seq`), then cut them off the log; returns the copy."""
    keep = torn_copy(path, seq)
    with open_log(path, writable=True) as fh:
        fd = open_private(keep, os.O_WRONLY | os.O_EXCL)
        try:
            copy_range(fh.fileno(), fd, good_bytes, os.fstat(fh.fileno()).st_size)
        finally:
            os.close(fd)
        fh.truncate(good_bytes)
    return keep


def _quarantine_file(path: Path, moment: datetime) -> tuple[Path, int]:
    """A new file beside the log for bytes set aside (created here, opened for writing);
    an earlier quarantine is never overwritten."""
    stamp = moment.strftime("%Y%m%dT%H%M%SZ")
    attempt = 1
    while True:
        suffix = "" if attempt == 1 else f".{attempt}"
        keep = path.with_name(f"{path.name}.quarantine-{stamp}{suffix}")
        try:
            return keep, open_private(keep, os.O_WRONLY | os.O_EXCL)
        except FileExistsError:
            attempt += 1


def fsync_directory(directory: Path) -> None:
    """Make a new name in `directory` durable (best effort: not every file system can)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def quarantine(path: Path, keep_from: int, moment: datetime) -> tuple[Path, int]:
    """Move every byte of the log from `keep_from` on into a new quarantine file beside
    it, then cut the log there; returns the file and how many bytes it holds.

    Only the writer (it holds the thread's lock) may. The copy is on disk (fsync, and
    its name) before the log is cut, so a crash between the two leaves the bytes in
    both places, never in neither; a replay snapshot or a resume index covering more
    than what stays is removed before the cut (`discard_beyond`). The bytes are copied
    a chunk at a time and a hole stays a hole (a log extended by gigabytes of zeros
    costs no disk to set aside).
    """
    with open_log(path, writable=True) as log:
        size = os.fstat(log.fileno()).st_size
        keep, fd = _quarantine_file(path, moment)
        try:
            copy_range(log.fileno(), fd, keep_from, size)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            keep.unlink(missing_ok=True)  # the log is untouched: nothing was set aside
            raise
        os.close(fd)
        fsync_directory(path.parent)
        snapshot.discard_beyond(path, keep_from)
        resume.discard_beyond(path, keep_from)
        log.truncate(keep_from)
        log.flush()
        os.fsync(log.fileno())
    return keep, size - keep_from


def free_name(path: Path, moment: datetime) -> Path:
    """A quarantine name beside the log that nothing has yet."""
    stamp = moment.strftime("%Y%m%dT%H%M%SZ")
    attempt = 1
    while True:
        suffix = "" if attempt == 1 else f".{attempt}"
        keep = path.with_name(f"{path.name}.quarantine-{stamp}{suffix}")
        if not os.path.lexists(keep):
            return keep
        attempt += 1


def move_aside(path: Path, moment: datetime) -> Path:
    """Give whatever lies under the log's name (a FIFO, a link to a device, a file that
    is not this log) a quarantine name, as it is: nothing of it is read or removed."""
    keep = free_name(path, moment)
    os.rename(path, keep)
    fsync_directory(path.parent)
    return keep
