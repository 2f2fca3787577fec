"""A thread's log as its writer holds it: `SessionLog`, opened, appended, kept.

An open loads the log (from its end when it can: engine.log.load) and repairs what
a crash or damage left (engine.log.repair). An append stamps the payload (seq,
time), writes one whole line or nothing (`LogWriteError` when it cannot: engine.log.
failures), then runs the engine's projections and the front ends' listeners. A
clean close keeps the resume index beside it (`keep_index`). Over 400 lines as one
class: the load, the appends and the file checks share the writer's state.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar, cast

from msgspec.structs import replace

from engine.events import Event, SessionRewind, UnknownEvent
from engine.log import resume, snapshot
from engine.log.brackets import TailState
from engine.log.change import LineChange, line_change
from engine.log.cold import Fold
from engine.log.event_list import FileEvents, LineEvents, StoredEvents, line_runs
from engine.log.failures import (
    Listener,
    ListenerErrorHandler,
    LogWriteError,
    report_listener_error,
)
from engine.log.file_check import FileCheck
from engine.log.index import LogIndex
from engine.log.line import parent_seq
from engine.log.line_codec import LogCorruptError, encode_line
from engine.log.load import WINDOW, Loaded, load
from engine.log.log_file import open_log
from engine.log.repair import cut_torn, move_aside, quarantine
from engine.log.resume import Attachment
from engine.log.state import FileFacts, LineState
from engine.util.collector import paused_gc
from engine.util.private import open_private, private_dir

Clock = Callable[[], datetime]
E = TypeVar("E", bound=Event | UnknownEvent)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _format_ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _events(count: int) -> str:
    return f"{count} event" + ("" if count == 1 else "s")


class SessionLog(FileCheck):
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
        self.file_events: FileEvents = FileEvents()
        """Every event of the file, in seq order (engine.log.event_list): the newest held
        in memory, older ones read from the file when asked for."""
        self.events: FileEvents | LineEvents = self.file_events
        """The thread's line (`engine.log.line`): every event, unless a rewind left a branch
        (the same sequence while there is one line)."""
        self.on_rewind: list[Callable[[], None]] = []
        """Run when an appended `session/rewind` has switched `events` to the new line,
        before projections and listeners see it: what holds state derived from the old
        line changes it by `line_change`, or rebuilds it from `events` (the surface, the
        continuity caches)."""
        self.line_change: LineChange | None = None
        """What the rewind being appended changes of the line (engine.log.change), for
        `on_rewind` to read; None when it goes too far back or across to tell, and once
        the hooks have run."""
        self.state = LineState(drafts=[])
        """The line's folds (engine.log.state): its brackets (`tail`), the inbox items still
        queued, the draft, the archive and note records, the injections."""
        self.facts = FileFacts()
        self.index = LogIndex()
        """Where the file's lines start, and its blocks' digests (engine.log.index)."""
        self.kept: Attachment | None = None
        """What the resume index this log opened from keeps for the layer above (the
        surface), standing for its first `kept_events` events; None: it opened without
        one, or a rewind has changed the line since in a way no `line_change` tells."""
        self.kept_events = 0
        self.listeners: list[Listener] = []
        self.projections: list[Listener] = []
        self.on_listener_error: ListenerErrorHandler = report_listener_error
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

    @property
    def tail(self) -> TailState:
        """The open brackets at the line's end (the same object for the log's life)."""
        return self.state.tail

    @property
    def has_history(self) -> bool:
        """Anything the user typed in the file: a prompt, sent or queued, or a draft."""
        return self.facts.typed

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
    def writable(self) -> bool:
        """Open for appends, and taking them (not read-only, closed or broken)."""
        return self._fd is not None and self.read_only is None and self._broken is None

    @property
    def exists(self) -> bool:
        """False until a pending log's first append made its file."""
        return self._create is None

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        clock: Clock = _utcnow,
        read_only: str | None = None,
        fold: Callable[[], Fold] | None = None,
    ) -> SessionLog:
        """Load the file (from its end, when a resume index stands for its first bytes:
        engine.log.load) and keep it open for appends.

        A torn tail is cut off the file so the next append starts on a clean
        line; its bytes are kept beside the log, never silently dropped.
        A bad line elsewhere (or one out of seq order) ends what loads: that
        line and everything after it are moved to a quarantine file beside
        the log (`quarantine`), and appends go on after the last good seq.
        With `read_only` (the reason) the file is only read: nothing is cut
        or moved, the prefix is what loads, and every append raises
        LogWriteError with that reason.

        Without a usable resume index the file is read in one pass (engine.log.cold) with
        `fold` (the surface) folded as it goes, and the writer writes the index at once
        for a log longer than what an open holds, so the next open reads its end only.
        """
        log = cls(path, clock=clock)
        loaded = load(path, fold)
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
                keep = cut_torn(path, loaded.good_bytes, count + 1)
                log.torn_report = loaded.torn + f" (kept in {keep.name})"
                log.set_aside = keep
        else:
            log.read_only = read_only
            if loaded.damage is not None:
                log.damage_report = (
                    f"{loaded.damage}; showing the {_events(count)} before it "
                    "(the log is repaired when its writer opens it, or by trove doctor)"
                )
        log._adopt(loaded)
        if read_only is None:
            log._fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            log._size = os.fstat(log._fd).st_size
            log._note()
            if loaded.cold and count > WINDOW:
                log.keep_index(*((log.kept.head, log.kept) if log.kept is not None else ()))
        return log

    def _adopt(self, loaded: Loaded) -> None:
        """Take what the load found: the events, the index, and the line's state (replayed
        here from the events when the log was read whole)."""
        self.file_events = self.events = loaded.events
        self.index = loaded.index
        self.snapshot_events = loaded.from_snapshot
        if loaded.state is None or loaded.facts is None:
            with paused_gc():
                self.state.replay(self.file_events.held(), self.facts)
            if self.facts.rewinds:
                self._follow_line()  # what follows the line: from the line, not the file
            return
        self.state, self.facts = loaded.state, loaded.facts
        self.kept, self.kept_events = loaded.attachment, loaded.kept
        if loaded.events.stored is not None:
            loaded.events.stored.on_damage = self._damaged
        if self.facts.rewinds:
            if loaded.rewound:
                self._forget_kept()
            self._follow_line(replay=loaded.rewound)

    @property
    def next_seq(self) -> int:
        return len(self.file_events) + 1

    def _follow_line(self, *, replay: bool = True) -> None:
        """Make `events` the current line's (after a rewind), and with `replay` the state
        that follows the line too, folded again from its start (the line's events are read
        again: older ones from the file). The brackets and the queue are the file's folds
        (engine.log.state): a rewind's own line has set them.

        Turn numbers stay unique in the file: the next turn is numbered past every
        turn of every branch, so a turn number names one turn whatever the line.
        """
        runs = line_runs(len(self.file_events), self.facts.rewinds)
        if len(runs) == 1 and runs[0][0] == 1:
            self.events = self.file_events
        else:
            self.events = LineEvents(self.file_events, runs)
        if not replay:
            return
        fresh = LineState(drafts=[])
        with paused_gc():
            fresh.replay(self.events)
        state = self.state
        state.records, state.hidden = fresh.records, fresh.hidden
        state.draft, state.drafts = fresh.draft, fresh.drafts

    def _rewound(self, rewind: SessionRewind) -> None:
        """An appended rewind: the line becomes the new one. What follows the line goes back
        to where the two lines meet and takes in the new one's events after it
        (engine.log.change): the last exchange or two for /retry and /edit, however long
        the thread. A rewind far back or across folds the line again from its start."""
        old = line_runs(rewind.seq - 1, self.facts.rewinds)
        new = line_runs(parent_seq(rewind), self.facts.rewinds)
        change = line_change(self.file_events, old, new)
        self.line_change = change
        if change is None:
            self._forget_kept()  # the surface kept in the index no longer stands for it
            self._follow_line()
        else:
            self._follow_line(replay=not self.state.follow(change, self.file_events))
        try:
            for hook in list(self.on_rewind):
                hook()
        finally:
            self.line_change = None  # it holds the events it names: not past the hooks

    def _damaged(self, error: LogCorruptError) -> None:
        """An older event read on demand is unreadable: the log was damaged after its resume
        index was made. The index goes, so the next open reads the log whole and repairs
        it (the damaged line and what follows are set aside); said once, on the logger."""
        if self.damage_report is None:
            self.damage_report = (
                f"{error}; the log is read whole and repaired the next time the thread opens"
            )
            logging.getLogger("trove").warning("%s", self.damage_report)
        resume.discard(self.path)

    def _forget_kept(self) -> None:
        """The resume index's attachment no longer stands for the line (a rewind)."""
        kept, self.kept = self.kept, None
        if kept is not None:
            kept.close()

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
        at = self._size
        self._write(line)
        self.index.add(line, at)
        self.file_events.append(event)
        if self.events is not self.file_events:
            self.events.append(event)
        self.facts.apply(event)
        self.state.apply(event)
        if isinstance(event, SessionRewind):
            self._rewound(event)
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
        it closes), and only with every event held (a log opened whole: one opened from
        its resume index needs none). Blocking (it writes the whole log's worth): off the
        loop."""
        if self.read_only is not None or self._fd is None or self._broken is not None:
            return False
        if self.file_events.held_from != 0:
            return False
        self.check_file()
        events = self.file_events.held()
        if not snapshot.worth_writing(events, self.snapshot_events):
            return False
        if not snapshot.write(self.path, events, self._size):
            return False
        self.snapshot_events = len(events)
        return True

    def keep_index(
        self, head: bytes = b"", attached: list[bytes] | Attachment | None = None
    ) -> bool:
        """Write the resume index (engine.log.resume): the index and the line's state at the
        log's end, with what the layer above keeps in it (`head`, read at every open, and
        `attached`, read when it asks: the surface). Only the writer does, with nothing
        being appended (as it closes). Blocking: the part of the file not yet indexed (a
        log opened whole: all of it) is read once. False when nothing was written."""
        if not self.writable:
            return False
        self.check_file()
        try:
            with open_log(self.path) as fh:
                if os.fstat(fh.fileno()).st_size != self._size:
                    return False
                self.index.catch_up(fh, self._size)
        except OSError:
            return False
        if self.index.count != len(self.file_events) or self.index.size != self._size:
            return False
        return resume.write(self.path, self.index, self.facts, self.state, head, attached)

    def refresh_index(self, head: bytes, attached: list[bytes]) -> bool:
        """`keep_index` while the log is open, for an open that read many lines after its
        index (a crash after a long session): the next open starts from here even if this
        session ends in a crash too. What the layer above kept is then the new index's
        (`kept`, `kept_events`). Only with nothing being appended (as the thread opens)."""
        if not self.keep_index(head, attached):
            return False
        try:
            with open_log(self.path) as fh:
                kept = resume.load(self.path, fh)
        except OSError:
            kept = None
        self._forget_kept()
        if kept is not None and kept.index.count == len(self.file_events):
            self.kept, self.kept_events = kept.attachment, kept.index.count
        elif kept is not None:
            kept.attachment.close()
        return True

    def stored(self) -> StoredEvents | None:
        """The reader of the older events (None: every event is held)."""
        return self.file_events.stored

    def close(self) -> None:
        if self._fd is not None:
            if self._broken is None:
                self.check_file()
            fd, self._fd = self._fd, None
            os.close(fd)
        self._forget_kept()
