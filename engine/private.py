"""Private files and directories: data dirs 0700, files 0600, whatever the umask.

A thread's log, its archive, exports and the prompt history hold everything
the user typed, so nobody else on the machine may read them. `mkdir` and
`open` apply the umask (022 makes 0755 and 0644), so every place Trove
creates data goes through here, and the exact mode is set after creation.

Existing modes: data that an older version (or a loose umask) left readable
is tightened (group and other bits removed) when Trove opens it to write, as
long as this user owns it; a chmod that fails is not an error (the data is
still usable, just not ours to change). A directory above the data root
(e.g. a missing `~/.local/share`) is created like `mkdir -p` would: it is
not Trove's data. SQLite gives `-wal`/`-shm` the mode of their database, so
a private database file keeps its companions private too.
"""

from __future__ import annotations

import os
import stat
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
