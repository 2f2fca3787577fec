"""The writer's check that the file it appends to is still the log it wrote, and its
rewrite of the log when it is not (a mixin of `SessionLog`).

A cleanup script, a sync tool or a person may delete, replace, cut or write into a
thread's log while its writer holds it. Before each append, before what is kept
beside the log is written, and at close, the writer compares the file under the
log's name with the one it holds; when they differ it writes the log out again from
the events it holds (older ones read from the file it opened, which it still has
open) and keeps whatever was under the name beside it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from engine.log import resume
from engine.log.event_list import FileEvents, LineEvents
from engine.log.index import LogIndex
from engine.log.line_codec import LogCorruptError, encode_line
from engine.log.log_file import open_log
from engine.log.repair import free_name, fsync_directory
from engine.log.replay import read_events
from engine.util.private import open_private


def _events(count: int) -> str:
    return f"{count} event" + ("" if count == 1 else "s")


class FileCheck:
    """`check_file` and `write_again`, over the fields `SessionLog` keeps."""

    path: Path
    clock: Callable[[], datetime]
    file_events: FileEvents
    events: FileEvents | LineEvents
    index: LogIndex
    read_only: str | None
    rewritten: list[str]
    _fd: int | None
    _size: int
    _ctime: int
    _watching: bool

    def _note(self) -> None:
        """Remember the file as this writer leaves it (after its open, and each write)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self._ctime = os.fstat(self._fd).st_ctime_ns

    def check_file(self) -> bool:
        """Whether the log's name still holds the file this writer writes, as it left it.

        Run before each append, before the snapshot is written and at close: a
        cleanup script, a sync tool or a person may have deleted the file, put
        another in its place (another thread's copy, a link to a FIFO), or cut,
        extended or written into it, all while this writer held the thread, and
        what it appended after that would be lost with the file, or follow a
        torn line and be set aside at the next open. So when the file is not
        as this writer left it (its name, inode, size, and ctime, which only a
        write, a cut or a chmod moves: a change of ctime alone is checked by
        reading the file back), the log is written out again from the events
        this process holds, and whatever was under the name is kept beside it
        under a quarantine name (`write_again`). False when it was; a failure
        to (the thread's directory removed: the thread was deleted) is said
        once on the "trove" logger, and the writer goes on as before.
        """
        if self._fd is None or not self._watching or self.read_only is not None:
            return True
        try:
            held = os.fstat(self._fd)
            try:
                named: os.stat_result | None = os.stat(self.path)
            except (FileNotFoundError, NotADirectoryError):
                named = None
            ours = named is not None and (named.st_dev, named.st_ino) == (
                held.st_dev,
                held.st_ino,
            )
            if (
                ours
                and held.st_size == self._size
                and (held.st_ctime_ns == self._ctime or self._reads_as_written())
            ):
                self._ctime = held.st_ctime_ns
                return True
            what = "deleted" if named is None else "changed" if ours else "replaced"
            self.write_again(what)
        except (OSError, LogCorruptError) as exc:
            self._watching = False
            logging.getLogger("trove").warning(
                "%s: the log is no longer the file Trove writes, and could not be written "
                "out again (%s)",
                self.path,
                getattr(exc, "strerror", None) or exc,
            )
            return True
        return False

    def _reads_as_written(self) -> bool:
        """The file holds exactly what this writer wrote (its ctime moved, e.g. a chmod or a
        touch, but nothing else changed): read back whole, checked against the events held,
        or the index's digests when older events are not held (blocking, like the open)."""
        if self.file_events.held_from == 0:
            loaded = read_events(self.path)
            return (
                loaded.damage is None
                and loaded.torn is None
                and loaded.events == self.file_events.held()
            )
        if self.index.hashed != self._size:
            return False
        with open_log(self.path) as fh:
            return self.index.matches(fh)

    def write_again(self, what: str) -> None:
        """Write the log out again from the events this process holds (older ones read from
        the file it opened, which it still has open), under its name, and append to that
        file from now on. Whatever was under the name is kept beside it under a quarantine
        name (never removed); the new file is complete on disk (fsync) before it takes the
        name, atomically. `what` says what happened to the old one. An older event that
        can no longer be read (the file was cut or written over in place) raises
        LogCorruptError before anything is renamed."""
        assert self._fd is not None
        directory = self.path.parent
        temporary = directory / f".{self.path.name}.again"
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        fd = open_private(temporary, os.O_WRONLY | os.O_APPEND | os.O_EXCL | os.O_CLOEXEC)
        index = LogIndex()
        reader: BinaryIO | None = None
        try:
            size = 0
            with os.fdopen(os.dup(fd), "wb") as out:
                for event in self.file_events:
                    line = encode_line(event)[0]
                    index.add(line, size)
                    size += out.write(line)
            os.fsync(fd)
            kept: Path | None = None
            if os.path.lexists(self.path):
                kept = free_name(self.path, self.clock())
                try:
                    os.link(self.path, kept, follow_symlinks=False)
                except OSError:
                    os.rename(self.path, kept)  # no hard links here: the name is free a moment
            reader = open_log(temporary)
            os.replace(temporary, self.path)
        except BaseException:
            os.close(fd)
            if reader is not None:
                reader.close()
            temporary.unlink(missing_ok=True)
            raise
        fsync_directory(directory)
        resume.discard(self.path)  # it stands for the old file's bytes
        old, self._fd, self._size = self._fd, fd, size
        os.close(old)
        self.index = index
        stored = self.file_events.stored
        if stored is not None:
            stored.use(index, reader)
        else:
            reader.close()
        self._note()
        report = (
            f"{self.path}: the log was {what} by another program while Trove was writing "
            f"it; wrote its {_events(len(self.file_events))} out again"
            + (f" (what was under its name is kept in {kept.name})" if kept else "")
        )
        self.rewritten.append(report)
        logging.getLogger("trove").warning("%s", report)
