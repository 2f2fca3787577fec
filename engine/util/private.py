"""Private files and directories: data dirs 0700, files 0600, whatever the umask.

Logs, archives, exports and the prompt history hold everything the user typed, and
`mkdir` and `open` apply the umask, so every place Trove creates data goes through
here and the exact mode is set after creation. Data an older version left readable
is tightened when opened to write, if this user owns it (a failed chmod is not an
error). SQLite gives `-wal`/`-shm` their database's mode, so they stay private too.

Derived files (the caches beside a log) go through `open_derived`, `read_derived`
and `write_derived`: the log outranks them, so what is found under their names is
never trusted. A link is not followed, a FIFO not waited on, a device or an
oversized file not read, and a write goes through a new temporary file, so a link
put under its name is never written through.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def tighten(path: Path) -> None:
    """Remove group and other access from a file or directory this user owns."""
    try:
        info = os.stat(path)
        if info.st_mode & 0o077 and info.st_uid == os.getuid():
            os.chmod(path, stat.S_IMODE(info.st_mode) & 0o700)
    except OSError:
        pass


def private_dir(path: Path, *, base: Path | None = None) -> Path:
    """`mkdir -p path` with every data directory 0700; returns `path`.

    Directories from `base` down to `path` are data: missing ones are made
    0700 and existing ones are tightened. Parents above `base` are made with
    the default mode. Without `base`, every missing directory is data, and
    of the existing ones only `path` itself is tightened.
    """
    path = Path(path)
    chain = [path, *path.parents]
    data = chain[: chain.index(base) + 1] if base is not None and base in chain else [path]
    missing = []
    for directory in chain:
        if directory.is_dir():
            break
        missing.append(directory)
    for directory in reversed(missing):
        private = base is None or directory in data
        try:
            directory.mkdir(mode=DIR_MODE if private else 0o777)
        except FileExistsError:
            pass  # made by a racing process; tightened below like any existing one
        else:
            if private:
                os.chmod(directory, DIR_MODE)
    for directory in data:
        if directory not in missing:
            tighten(directory)
    return path


def open_private(path: Path, flags: int) -> int:
    """A file descriptor for `path`, created 0600 when missing, tightened when it exists.

    With `os.O_EXCL` in `flags` an existing file is an error, as for `os.open`.
    """
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        if flags & os.O_EXCL:
            raise
        fd = os.open(path, flags)
        tighten(path)
    else:
        os.fchmod(fd, FILE_MODE)
    return fd


def touch_private(path: Path) -> Path:
    """Make sure `path` exists as a private file (its content is left alone)."""
    os.close(open_private(path, os.O_WRONLY))
    return path


def write_private(path: Path, data: bytes) -> Path:
    """Replace the content of `path` with `data`, as a private file."""
    with os.fdopen(open_private(path, os.O_WRONLY | os.O_TRUNC), "wb") as fh:
        fh.write(data)
    return path


_DERIVED_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_derived(path: Path, max_bytes: int) -> io.BufferedReader:
    """`path` open for reading when it is a regular file of at most `max_bytes`; else OSError.

    Checked on the open file (fstat), before a byte is read: a symlink is not
    followed (ELOOP), a FIFO is opened without waiting for a writer and then
    refused like a device, a socket or a directory (EINVAL), and a larger file is
    refused (EFBIG). A caller that takes any OSError for "no usable file" can
    then neither hang nor allocate past its bound.
    """
    fd = os.open(path, _DERIVED_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if info.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"larger than {max_bytes:,} bytes", str(path))
        os.set_blocking(fd, True)
        return open(fd, "rb")  # the caller closes it
    except BaseException:
        os.close(fd)
        raise


def read_derived(path: Path, max_bytes: int) -> bytes:
    """The whole of `path`, read through `open_derived` (OSError: no usable file).

    Only as many bytes as the file holds are asked for (never the bound), and a
    file that changes size while it is read (derived files are replaced whole,
    never written in place) is an error too.
    """
    with open_derived(path, max_bytes) as fh:
        size = os.fstat(fh.fileno()).st_size
        data = fh.read(size + 1)
    if len(data) != size:
        raise OSError(errno.EAGAIN, "changed as it was read", str(path))
    return data


def write_derived(path: Path, chunks: Iterable[bytes], *, temporary: Path | None = None) -> bool:
    """Replace `path` atomically with the bytes of `chunks`, as a private file.

    False when that failed: the old file (or none) is left, and no temporary copy.
    The copy is always created anew (O_EXCL; a leftover under its name is removed
    first), so a link or a FIFO found there is never opened. `temporary` names it
    (a thread's writer uses one name, so a copy a kill left is overwritten by the
    next write instead of piling up); by default a name of its own.
    """
    if temporary is None:
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        with os.fdopen(open_private(temporary, os.O_WRONLY | os.O_EXCL), "wb") as out:
            for chunk in chunks:
                out.write(chunk)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
        return False
    return True
