"""The log's file as found on disk: opened only when it is a regular file, read up to its
first hole, copied without filling its holes.

The log is the source of truth, but what lies under its name is whatever a
crash, a sync tool or a person left there. A FIFO under the name would block
an open for ever (no writer comes), and a link to /dev/zero would be read
until memory ran out, so every reader opens it through `open_log`, which
refuses anything but a regular file before a byte is read. A file extended
past its data (a sparse extension: `truncate -s 4G`) holds a hole of zeros
that no line can contain, so a reader stops at the first hole
(`read_to_hole`) instead of reading gigabytes of zeros, and the writer sets
the rest aside with `copy_range`, which copies only the data and leaves the
copy's holes as holes.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20


class NotRegularError(OSError):
    """The log's name holds something other than a regular file (a FIFO, a device, a
    socket, a directory), or a link to one; `what` says which."""

    def __init__(self, path: os.PathLike[str] | str, what: str) -> None:
        super().__init__(errno.EINVAL, f"not a regular file ({what})", os.fspath(path))
        self.what = what


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a file"


def open_log(path: os.PathLike[str] | str, *, writable: bool = False) -> BinaryIO:
    """The log open for reading (and writing, with `writable`: the writer's repairs), when
    it is a regular file (a link to one is followed); NotRegularError otherwise,
    FileNotFoundError when there is nothing there.

    Opened without waiting (a FIFO has no writer to wait for) and checked on the
    open file, so nothing can be swapped in between the check and the read."""
    fd = os.open(path, _FLAGS | os.O_RDWR if writable else _FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularError(path, _kind(mode))
        os.set_blocking(fd, True)
        return open(fd, "r+b" if writable else "rb")  # the caller closes it
    except BaseException:
        os.close(fd)
        raise


def reopen_log(fh: BinaryIO) -> BinaryIO:
    """The same open file again, for reading on its own (a reader that outlives `fh`)."""
    fd = os.dup(fh.fileno())
    try:
        return open(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_to_hole(fh: BinaryIO, start: int) -> tuple[bytes, int]:
    """The file's bytes from `start` up to its first hole at or after `start` (its end
    where it has none, or where the file system cannot say), and the file's size."""
    fd = fh.fileno()
    size = os.fstat(fd).st_size
    end = size
    if start < size:
        # The descriptor's offset is put back: `fh` buffers, and trusts it (a file read
        # before this call would otherwise be read from the hole on).
        position = os.lseek(fd, 0, os.SEEK_CUR)
        try:
            end = min(size, os.lseek(fd, start, os.SEEK_HOLE))
        except OSError:
            end = size
        finally:
            os.lseek(fd, position, os.SEEK_SET)
    fh.seek(start)
    return fh.read(max(0, end - start)), size


def copy_range(source: int, target: int, start: int, end: int) -> None:
    """Copy bytes `start`..`end` of the file open as `source` to the start of `target`,
    a new empty file: only the data is read and written, a hole stays a hole (the copy
    of a 4 GiB sparse tail takes no disk), in chunks (no copy of it on the heap)."""
    offset = start
    while offset < end:
        try:
            data = os.lseek(source, offset, os.SEEK_DATA)
            hole = min(end, os.lseek(source, data, os.SEEK_HOLE))
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                break  # only a hole is left
            data, hole = offset, end  # the file system cannot say: copy it all
        if data >= end:
            break
        while data < hole:
            chunk = os.pread(source, min(_CHUNK, hole - data), data)
            if not chunk:
                break
            _write_all(target, chunk, data - start)
            data += len(chunk)
        offset = hole
    os.ftruncate(target, end - start)


def _write_all(fd: int, data: bytes, at: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, at)
        view = view[written:]
        at += written
