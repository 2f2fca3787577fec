"""The scope the continuity tools run in: one thread, at one position of its log.

A `ContinuityContext` is what the tools need from a running thread: its log's
records (the events the archive scan and the notebook read: engine.log.state),
the injections, its active surface, the archive store (None when continuity is
disabled) and who it belongs to. Each tool call takes a cheap `Snapshot` of it on
the event loop, then does the archive work in a worker thread, so SQLite never
blocks the loop. The line's whole events are read only to archive again what a
crash left unarchived, in a worker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.continuity.archive.extract import OfferedMessage, hidden_seqs, surface_inputs
from engine.continuity.archive.status import scope_binding
from engine.continuity.archive.store import ArchiveStore
from engine.continuity.search.view import ActiveIndex, HistoryView
from engine.events import Event, LogEvent
from engine.log import SessionLog
from engine.surface import Surface


@dataclass
class Snapshot:
    """A position's inputs, taken on the event loop and used from a worker thread."""

    events: list[LogEvent]
    """The log's records up to the position: every event `scan_history` and
    `notebook_at` read (engine.log.state), not every event."""
    active: list[OfferedMessage]
    scope: str
    store: ArchiveStore | None
    index: ActiveIndex = field(default_factory=ActiveIndex)
    line: Sequence[LogEvent] = ()
    """The line's events (older ones read from the log's file: only in a worker), for a
    tool result the archive holds cut (engine.continuity.tools); empty: not read."""

    def view(self) -> HistoryView:
        """Resolve and open the history (blocking: may read the archive)."""
        return HistoryView.open(self.events, self.scope, self.active, self.store, self.index)


@dataclass
class ContinuityContext:
    """What the tools need from one open thread.

    `events()` returns the log events up to the current position (a long log's older
    ones are read from its file: only for work in a worker), `records()` the ones the
    archive scan and the notebook read (all of them will do), `hidden()` the seqs of
    injected context so far (None: found in `events()`), `entries()` the active
    surface entries (`Surface.entries`), `append(event)` writes a log event (for
    notes; None makes task_note refuse).
    """

    user_id: str
    thread_id: str
    events: Callable[[], Sequence[LogEvent]]
    entries: Callable[[], Iterable[Any]]
    store: ArchiveStore | None
    append: Callable[[Event], LogEvent] | None = None
    index: ActiveIndex = field(default_factory=ActiveIndex)
    records: Callable[[], Sequence[LogEvent]] | None = None
    hidden: Callable[[], Sequence[int]] | None = None
    _hidden: set[int] = field(default_factory=set, repr=False)
    _hidden_upto: int = field(default=0, repr=False)

    @property
    def scope(self) -> str:
        """The binding every archive reference of this thread must carry."""
        return scope_binding(self.user_id, self.thread_id)

    @classmethod
    def for_log(
        cls,
        log: SessionLog,
        surface: Surface,
        store: ArchiveStore | None,
        *,
        user_id: str,
        thread_id: str,
    ) -> ContinuityContext:
        """A context over a live `SessionLog` and its `Surface` (e.g. the driver's)."""
        context = cls(
            user_id,
            thread_id,
            events=lambda: log.events,
            entries=lambda: surface.entries,
            store=store,
            append=log.append,
            records=lambda: log.state.records,
            hidden=lambda: log.state.hidden,
        )
        log.on_rewind.append(context.forget)
        return context

    def forget(self) -> None:
        """The line changed under the caches (a rewind): fold it in again from its start."""
        self._hidden, self._hidden_upto = set(), 0

    def recorded(self) -> list[LogEvent]:
        """The records up to the current position, as a list of their own."""
        return list(self.records() if self.records is not None else self.events())

    def hidden_seqs(self) -> set[int]:
        """The seqs of injected context up to the current position (the set is kept and
        grown: the caller must not change it)."""
        # The log only grows, so injections are folded in incrementally; a
        # shorter list (an older position) starts over.
        if self.hidden is not None:
            seqs: Sequence[Any] = self.hidden()
            fold: Callable[[Sequence[Any]], set[int]] = set
        else:
            seqs, fold = self.events(), hidden_seqs
        if len(seqs) < self._hidden_upto:
            self._hidden, self._hidden_upto = set(), 0
        self._hidden |= fold(seqs[self._hidden_upto :])
        self._hidden_upto = len(seqs)
        return self._hidden

    def snapshot(self) -> Snapshot:
        active = surface_inputs(self.entries(), self.hidden_seqs())
        return Snapshot(self.recorded(), active, self.scope, self.store, self.index, self.events())
