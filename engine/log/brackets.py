"""The open brackets a log's tail leaves: the open turn, the open compaction, the end-seed.

`compact/start` is the only compaction lock, so whether one is open is read
here, from replay, not from process memory.
"""

from __future__ import annotations

from collections.abc import Iterable

from msgspec import Struct, field

from engine.events import (
    CompactEnd,
    CompactStart,
    EndSeed,
    LogEvent,
    SessionRewind,
    SessionSystem,
    TurnEnd,
    TurnStart,
)


class TailState(Struct):
    """What replay knows about open brackets, kept by one transition function.

    `open_turn` and `open_compact` are cleared by `session/end-seed`: whatever
    was open before the seam belongs to an earlier lifecycle (a crash), so it
    is stale and must not wedge the resumed session.

    A fold of the file's events in file order, whatever line the thread is on: a
    rewind clears what is open, so the brackets come out as on the new line, and the
    seam's facts (`end_seed`, `quit_compact`) are the lifecycle's, kept through a
    rewind as the system prompt is (a /retry undone at open keeps this open's seam).
    """

    open_turn: TurnStart | None = None
    open_compact: CompactStart | None = None
    end_seed: EndSeed | None = None
    stale_compacts: list[CompactStart] = field(default_factory=list)
    last_turn: int = 0
    quit_compact: CompactStart | CompactEnd | None = None
    """The compaction the newest seam found interrupted by the end of its lifecycle: left
    open (stale), or closed as cancelled because the session was closing (a quit)."""
    system: SessionSystem | None = None
    """The newest `/system` of the file, on any branch (the thread's system prompt is the
    thread's, not its line's: `SessionLog` keeps it across a rewind)."""
    _closed_compact: CompactEnd | None = None

    def replay(self, events: Iterable[LogEvent]) -> None:
        """Every event of a loaded log; only brackets reach `apply` (most events are not)."""
        apply = self.apply
        for event in events:
            if type(event) in BRACKETS:
                apply(event)

    def apply(self, event: LogEvent) -> None:
        if isinstance(event, TurnStart):
            self.open_turn = event
            if event.turn > self.last_turn:
                self.last_turn = event.turn
        elif isinstance(event, TurnEnd):
            if self.open_turn is not None and self.open_turn.turn == event.turn:
                self.open_turn = None
        elif isinstance(event, CompactStart):
            self.open_compact = event
        elif isinstance(event, CompactEnd):
            if self.open_compact is not None and event.start in (None, self.open_compact.seq):
                self.open_compact = None
            self._closed_compact = event
        elif isinstance(event, EndSeed):
            closed = self._closed_compact
            # "session closing" is the reason a closing runtime cancels its work with.
            quit_closed = closed if closed and closed.cancelled == "session closing" else None
            self.quit_compact = self.open_compact or quit_closed
            self._closed_compact = None
            if self.open_compact is not None:
                self.stale_compacts.append(self.open_compact)
            self.open_compact = None
            self.open_turn = None
            self.end_seed = event
        elif isinstance(event, SessionSystem):
            self.system = event
        elif isinstance(event, SessionRewind):
            # Appended only while nothing runs: whatever the new line left open
            # (the branch point of a crashed lifecycle) is stale on it.
            if self.open_compact is not None:
                self.stale_compacts.append(self.open_compact)
            self.open_compact = None
            self.open_turn = None


BRACKETS = frozenset(
    {TurnStart, TurnEnd, CompactStart, CompactEnd, EndSeed, SessionRewind, SessionSystem}
)
