"""The appending side of a thread's log: `SessionLog`, and `LogWriteError` when it cannot.

An append stamps the payload (seq, time), writes one whole line or nothing,
then runs the engine's projections and the front ends' listeners.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar, cast

from msgspec.structs import replace

from engine.errors import TroveError
from engine.events import Event, LogEvent, SessionRewind, TurnStart, UnknownEvent
from engine.log import control, snapshot
from engine.log.brackets import TailState
from engine.log.line import current_line
from engine.log.line_codec import encode_line
from engine.log.log_file import copy_range, open_log
from engine.log.replay import read_events
from engine.util.collector import paused_gc
from engine.util.private import open_private, private_dir

Listener = Callable[[LogEvent], None]
Clock = Callable[[], datetime]
E = TypeVar("E", bound=Event | UnknownEvent)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _format_ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _torn_copy(path: Path, seq: int) -> Path:
    """A new file for torn bytes; an earlier crash's copy is never overwritten."""
    keep = path.with_name(f"{path.name}.torn-{seq}")
    attempt = 1
    while keep.exists():
        attempt += 1
        keep = path.with_name(f"{path.name}.torn-{seq}.{attempt}")
    return keep


def _events(count: int) -> str:
    return f"{count} event" + ("" if count == 1 else "s")


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


def _fsync_directory(directory: Path) -> None:
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
    both places, never in neither; a replay snapshot covering more than what stays is
    removed before the cut (`snapshot.discard_beyond`). The bytes are copied a chunk at
    a time and a hole stays a hole (a log extended by gigabytes of zeros costs no disk
    to set aside).
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
        _fsync_directory(path.parent)
        snapshot.discard_beyond(path, keep_from)
        log.truncate(keep_from)
        log.flush()
        os.fsync(log.fileno())
    return keep, size - keep_from


def _free_name(path: Path, moment: datetime) -> Path:
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
    keep = _free_name(path, moment)
    os.rename(path, keep)
    _fsync_directory(path.parent)
    return keep


class LogWriteError(OSError, TroveError):
    """An append that did not happen: the file is byte for byte as before it.

    An OSError (ENOSPC, EDQUOT, EFBIG, EIO, EROFS …) with the log's path, so
    callers that already treat disk failures as OSError keep working. A log
    opened read-only raises it too, with the reason as the whole message.
    """

    def __init__(self, path: Path, cause: OSError | str, *, read_only: bool = False) -> None:
        reason = cause if isinstance(cause, str) else (cause.strerror or str(cause))
        code = errno.EROFS if read_only else (getattr(cause, "errno", 0) or 0)
        self.path = path
        self.reason = reason
        self.message = reason if read_only else f"{path}: could not write to the log: {reason}"
        super().__init__(code, self.message)

    def __str__(self) -> str:
        return self.message


ListenerErrorHandler = Callable[[Listener, LogEvent, Exception], None]


def _report_listener_error(listener: Listener, event: LogEvent, exc: Exception) -> None:
    """A front end's callback failed; the engine goes on and says so once, on the logger."""
    logging.getLogger("trove").warning(
        "a log listener (%s) failed on %s: %s: %s",
        getattr(listener, "__qualname__", listener),
        event.kind,
        type(exc).__name__,
        exc,
    )


class SessionLog:
    """One thread's log: replayed on open, appended one line per event.

    Each append reaches the OS before it returns (so a killed process keeps
    it); `flush()` adds the fsync that makes it survive a power cut.

    An append is all or nothing: a write that fails part-way (disk full, a
    file size limit, an I/O error) is cut back off the file before
    `LogWriteError` is raised, so the next append continues with the right
    seq on a clean line. If even that cut fails, the log stops taking appends
    for the rest of the process rather than write after a partial line (the
    file then loads with a torn tail).

    Engine projections (the surface) run first and may raise: they are the
    engine's own state. Listeners (front ends) are isolated: one that raises
    is reported through `on_listener_error` and never reaches the caller.
    """

    def __init__(self, path: Path, *, clock: Clock = _utcnow) -> None:
        self.path = path
        self.clock = clock
        self.events: list[LogEvent] = []
        """The thread's line (`engine.log.line`): every event, unless a rewind left a branch."""
        self.file_events: list[LogEvent] = self.events
        """Every event of the file, in seq order (the same list while there is one line)."""
        self.on_rewind: list[Callable[[], None]] = []
        """Run when an appended `session/rewind` has switched `events` to the new line,
        before projections and listeners see it: what holds state derived from the old
        line rebuilds it from `events` (the surface, the continuity caches)."""
        self.tail = TailState()
        self.listeners: list[Listener] = []
        self.projections: list[Listener] = []
        self.control: list[LogEvent] = []
        """The events that are not plain conversation, in order (`engine.log.control`):
        what the inbox restore and the history scan read instead of every event."""
        self.on_listener_error: ListenerErrorHandler = _report_listener_error
        self.torn_report: str | None = None
        self.damage_report: str | None = None
        """The line that ended the log's consistent prefix and what became of the rest
        (moved to a quarantine file by the writer; left alone by a read-only log): said
        once, since the writer leaves a clean log behind."""
        self.set_aside: Path | None = None
        """The file this open moved bytes of the log into (a quarantine, or a torn tail's
        copy), if it did."""
        self.read_only: str | None = None
        """Why appends are refused (None: they are not): another process holds the thread."""
        self.snapshot_events = 0
        """Events the replay snapshot beside the file holds (engine.log.snapshot), as far
        as this log knows: the one it was loaded with, or wrote."""
        self._fd: int | None = None
        self._size = 0
        self._ctime = 0
        """The file's ctime as this writer last left it (`_note`): a change it did not make
        is someone else's write (`check_file`)."""
        self._watching = True
        self.rewritten: list[str] = []
        """What `check_file` found and did, when it had to write the log out again."""
        self._broken: str | None = None
        self._create: Callable[[], None] | None = None
        self.on_create: list[Callable[[], None]] = []
        """Run once a pending log's file exists, before the append that made it: they
        may append (what waited for the thread to exist goes in ahead of it)."""

    @classmethod
    def pending(
        cls, path: Path, create: Callable[[], None], *, clock: Clock = _utcnow
    ) -> SessionLog:
        """An empty log whose file does not exist yet: the first append calls `create`
        (which makes the directory and takes the writer's lock), then makes the file.

        A thread opened and left without a message leaves nothing on disk.
        """
        log = cls(path, clock=clock)
        log._create = create
        return log

    @property
    def exists(self) -> bool:
        """False until a pending log's first append made its file."""
        return self._create is None

    @classmethod
    def open(
        cls, path: Path, *, clock: Clock = _utcnow, read_only: str | None = None
    ) -> SessionLog:
        """Replay the file and keep it open for appends.

        A torn tail is cut off the file so the next append starts on a clean
        line; its bytes are kept beside the log, never silently dropped.
        A bad line elsewhere (or one out of seq order) ends what loads: that
        line and everything after it are moved to a quarantine file beside
        the log (`quarantine`), and appends go on after the last good seq.
        With `read_only` (the reason) the file is only read: nothing is cut
        or moved, the prefix is what loads, and every append raises
        LogWriteError with that reason.
        """
        log = cls(path, clock=clock)
        loaded = read_events(path)
        count = len(loaded.events)
        if read_only is None:
            private_dir(path.parent)
            if loaded.not_regular is not None:
                keep = move_aside(path, log.clock())
                log.set_aside = keep
                log.damage_report = (
                    f"{loaded.damage}: nothing of it could be read; moved it to {keep.name} "
                    "and began the log again"
                )
            elif loaded.damage is not None:
                keep, size = quarantine(path, loaded.good_bytes, log.clock())
                log.set_aside = keep
                log.damage_report = (
                    f"{loaded.damage}; loaded the {_events(count)} before it, and moved that "
                    f"line and the rest of the log ({size} bytes) to {keep.name}"
                )
            elif loaded.torn is not None:
                keep = _torn_copy(path, len(loaded.events) + 1)
                with open_log(path, writable=True) as fh:
                    fd = open_private(keep, os.O_WRONLY | os.O_EXCL)
                    try:
                        copy_range(
                            fh.fileno(), fd, loaded.good_bytes, os.fstat(fh.fileno()).st_size
                        )
                    finally:
                        os.close(fd)
                    fh.truncate(loaded.good_bytes)
                log.torn_report = loaded.torn + f" (kept in {keep.name})"
                log.set_aside = keep
        else:
            log.read_only = read_only
            if loaded.damage is not None:
                log.damage_report = (
                    f"{loaded.damage}; showing the {_events(count)} before it "
                    "(the log is repaired when its writer opens it, or by trove doctor)"
                )
        log.events = log.file_events = loaded.events
        log.snapshot_events = loaded.from_snapshot
        with paused_gc():
            log.control = control.replay(log.events, log.tail)
            if any(type(event) is SessionRewind for event in log.control):
                log._follow_line()
        if read_only is None:
            log._fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            log._size = os.fstat(log._fd).st_size
            log._note()
        return log

    @property
    def next_seq(self) -> int:
        return len(self.file_events) + 1

    def _follow_line(self) -> None:
        """Make `events`, `control` and `tail` the current line's (after a rewind).

        Turn numbers stay unique in the file: the next turn is numbered past every
        turn of every branch, so a turn number names one turn whatever the line.
        """
        everything = self.file_events
        self.events = current_line(everything)
        fresh = TailState()  # kept in place: a reader may hold `tail`
        self.control = control.replay(self.events, fresh)
        top = max((e.turn for e in everything if type(e) is TurnStart), default=0)
        fresh.last_turn = max(fresh.last_turn, top)
        fresh.system = self.tail.system  # the file's newest, whatever the line
        for name in fresh.__struct_fields__:
            setattr(self.tail, name, getattr(fresh, name))

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Follow every appended event; the returned callable stops it (idempotent)."""
        self.listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self.listeners.remove(listener)

        return unsubscribe

    def append(self, payload: E) -> E:
        """Stamp the payload with the next seq and the time, and write it; projections
        and listeners run after the line is written. Returns the stamped event.

        A listener may append in turn (re-entrancy is allowed): the event it
        sees is already durable and already counted in `tail`.
        """
        if self.read_only is not None:
            raise LogWriteError(self.path, self.read_only, read_only=True)
        if self._broken is not None:
            raise LogWriteError(self.path, self._broken)
        if self._create is not None:
            self._materialize()
        if self._fd is None:
            raise LogWriteError(self.path, "the log is closed")
        self.check_file()
        stamped = replace(payload, seq=self.next_seq, ts=_format_ts(self.clock()))
        line, written = encode_line(stamped)
        event = cast(E, written)
        self._write(line)
        self.events.append(event)
        if self.file_events is not self.events:
            self.file_events.append(event)
        self.tail.apply(event)
        if control.is_control(event):
            self.control.append(event)
        if type(event) is SessionRewind:
            self._follow_line()
            for hook in list(self.on_rewind):
                hook()
        for projection in self.projections:
            projection(event)
        for listener in list(self.listeners):
            try:
                listener(event)
            except Exception as exc:  # a front end's failure never reaches the engine
                with contextlib.suppress(Exception):
                    self.on_listener_error(listener, event, exc)
        return event

    def _materialize(self) -> None:
        """The pending log's first append: its directory, lock and file, or nothing."""
        assert self._create is not None
        try:
            self._create()
            self._fd = open_private(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        except OSError as exc:
            raise LogWriteError(self.path, exc) from exc
        self._create = None
        self._size = 0
        self._note()
        for hook in self.on_create:
            hook()

    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        written = 0
        try:
            while written < len(data):
                written += self._raw_write(self._fd, data[written:])
        except OSError as exc:
            if written:
                try:
                    os.ftruncate(self._fd, self._size)
                    self._note()
                except OSError as undo:
                    self._broken = (
                        f"a failed write could not be undone ({undo.strerror or undo}); "
                        "restart Trove to go on"
                    )
            raise LogWriteError(self.path, exc) from exc
        self._size += written
        self._note()

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
        except OSError as exc:
            self._watching = False
            logging.getLogger("trove").warning(
                "%s: the log is no longer the file Trove writes, and could not be written "
                "out again (%s)",
                self.path,
                exc.strerror or exc,
            )
            return True
        return False

    def _reads_as_written(self) -> bool:
        """The file loads whole to exactly the events this writer holds (its ctime moved,
        e.g. a chmod or a touch, but nothing else changed)."""
        loaded = read_events(self.path)
        return loaded.damage is None and loaded.torn is None and loaded.events == self.file_events

    def write_again(self, what: str) -> None:
        """Write the log out again from the events this process holds, under its name, and
        append to that file from now on. Whatever was under the name is kept beside it
        under a quarantine name (never removed); the new file is complete on disk (fsync)
        before it takes the name, atomically. `what` says what happened to the old one."""
        assert self._fd is not None
        directory = self.path.parent
        temporary = directory / f".{self.path.name}.again"
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        fd = open_private(temporary, os.O_WRONLY | os.O_APPEND | os.O_EXCL | os.O_CLOEXEC)
        try:
            size = 0
            with os.fdopen(os.dup(fd), "wb") as out:
                for event in self.file_events:
                    size += out.write(encode_line(event)[0])
            os.fsync(fd)
            kept: Path | None = None
            if os.path.lexists(self.path):
                kept = _free_name(self.path, self.clock())
                try:
                    os.link(self.path, kept, follow_symlinks=False)
                except OSError:
                    os.rename(self.path, kept)  # no hard links here: the name is free a moment
            os.replace(temporary, self.path)
        except BaseException:
            os.close(fd)
            temporary.unlink(missing_ok=True)
            raise
        _fsync_directory(directory)
        old, self._fd, self._size = self._fd, fd, size
        os.close(old)
        self._note()
        report = (
            f"{self.path}: the log was {what} by another program while Trove was writing "
            f"it; wrote its {_events(len(self.file_events))} out again"
            + (f" (what was under its name is kept in {kept.name})" if kept else "")
        )
        self.rewritten.append(report)
        logging.getLogger("trove").warning("%s", report)

    def _raw_write(self, fd: int, data: bytes) -> int:
        """The one system call appends go through (fault-injection tests replace it)."""
        return os.write(fd, data)

    def flush(self) -> None:
        """fsync: the bytes are on disk, not just in the OS cache."""
        if self._fd is not None:
            os.fsync(self._fd)

    def keep_snapshot(self) -> bool:
        """Write the replay snapshot (engine.log.snapshot) if the log is long and the one
        beside it is well behind; only the writer does, with nothing being appended (as
        it closes). Blocking (it reads and writes the whole log's worth): off the loop."""
        if self.read_only is not None or self._fd is None or self._broken is not None:
            return False
        self.check_file()
        events = self.file_events
        if not snapshot.worth_writing(events, self.snapshot_events):
            return False
        if not snapshot.write(self.path, events, self._size):
            return False
        self.snapshot_events = len(events)
        return True

    def close(self) -> None:
        if self._fd is not None:
            if self._broken is None:
                self.check_file()
            fd, self._fd = self._fd, None
            os.close(fd)
