"""Rewind: go back to just before an earlier prompt, keeping the future it abandons.

A rewind appends one flushed `session/rewind` line naming the event the thread now
continues after: the log stays append-only and the thread becomes a tree
(`engine.log.line`). Every reader follows the new line, so the surface is the
conversation as it was, later compactions are undone on it, and batches archived
later are not reachable. The abandoned prompts stay listed, and rewinding to one
restores that branch.

A prompt is a turn the user started: going back just before it continues after the
event its turn began after, stepping back over its own `inbox/queued` lines when
they come right before it.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence
from typing import cast

from msgspec import Struct

from engine.driver import Driver, InboxItemId
from engine.errors import TroveError
from engine.events import InboxQueued, LogEvent, SessionRewind, TurnStart, UserMessage
from engine.log import LineEvents, SessionLog
from engine.log.line import parent_seq


class RewindRefused(TroveError):
    """Why a rewind cannot happen now; str(e) is the one line the user sees."""


class RewindPoint(Struct, frozen=True):
    """One earlier prompt a rewind can go back to."""

    number: int
    """1 is the newest prompt; what `/rewind N` takes."""
    turn: int
    """Seq of the prompt's `turn/start`."""
    after: int
    """Seq the thread continues after when rewound here (0: the empty start)."""
    text: str
    ts: str
    on_line: bool
    """False: the prompt is on a branch an earlier rewind left."""

    @property
    def time(self) -> str:
        """HH:MM of the prompt, in the log's UTC."""
        return self.ts[11:16] if len(self.ts) >= 16 else self.ts

    @property
    def day(self) -> str:
        return self.ts[:10]


def points(log: SessionLog, count: int | None = None) -> list[RewindPoint]:
    """Every prompt of the thread's first `count` events (all: None), on any branch,
    newest first.

    Blocking: it reads every event once, and a long thread's older events come from
    its file (engine.log.event_list), so a front end lists them in a worker, with the
    count taken on its loop.
    """
    everything = log.file_events
    count = len(everything) if count is None else count
    line = log.events
    texts: dict[int, str] = {}
    turns: list[tuple[TurnStart, int]] = []
    recent: deque[LogEvent] = deque(maxlen=_RECENT)
    for event in itertools.islice(everything, count):
        kind = type(event)
        if kind is UserMessage and event.item_id is not None:  # type: ignore[union-attr]
            texts[event.item_id] = event.text  # type: ignore[union-attr]
        elif kind is TurnStart and event.items:  # type: ignore[union-attr]
            turn = cast(TurnStart, event)
            turns.append((turn, _branch_point(everything, recent, turn)))
        recent.append(event)
    found: list[tuple[TurnStart, str, int]] = []
    for turn, after in turns:
        text = "\n\n".join(texts.get(item, "") for item in turn.items).strip()
        if text:
            found.append((turn, text, after))
    found.reverse()
    return [
        RewindPoint(number, turn.seq, after, text, turn.ts, _on(line, turn.seq))
        for number, (turn, text, after) in enumerate(found, 1)
    ]


_QUEUEING = (InboxQueued, SessionRewind)
"""The lines that queue a prompt with their own seq as its id (`SessionRewind.resend`)."""

_RECENT = 64
"""Events kept back while listing: a turn's own queued prompts come just before it."""


def _on(line: Sequence[LogEvent], seq: int) -> bool:
    if isinstance(line, LineEvents):
        return line.contains_seq(seq)
    return seq <= len(line)


def _branch_point(events: Sequence[LogEvent], recent: deque[LogEvent], turn: TurnStart) -> int:
    """The seq before `turn` on its line, stepped back over its own queued prompts (found
    among the `recent` events before it, else in `events`)."""
    after = parent_seq(turn)
    items = set(turn.items)
    while after > 0:
        back = turn.seq - after
        before: LogEvent | None
        if 0 < back <= len(recent):
            before = recent[-back]
        else:
            before = events[after - 1] if after <= len(events) else None
        if before is None or before.seq != after:
            break
        if type(before) in _QUEUEING and before.seq in items:
            after = parent_seq(before)  # its queueing line: an `inbox/queued`, an /edit's rewind
        else:
            break
    return after


def refusal(driver: Driver, log: SessionLog) -> str | None:
    """Why a rewind must wait (None: it may happen now). The same facts admission reads:
    the compaction bracket is the lock, and a turn or a queued prompt holds the boundary."""
    if log.read_only is not None:
        return f"cannot rewind: {log.read_only}"
    if log.tail.open_compact is not None:
        return "cannot rewind while a compaction runs: wait for it to finish or cancel it"
    if driver.running_turn is not None:
        return "cannot rewind while a reply runs: wait for it or cancel it (Esc / Ctrl-C)"
    if driver.inbox:
        return "cannot rewind while a prompt is queued: send it or remove it first"
    if driver.reserved:
        return "cannot rewind while a command holds the conversation (/compact): wait for it"
    return None


def rewind(driver: Driver, log: SessionLog, point: RewindPoint) -> str:
    """Go back to just before `point`'s prompt; returns its text, to edit and send again.

    Holds turn admission for the one synchronous append, so no turn can start
    on the old line in between; the line is fsynced before this returns.
    """
    why = refusal(driver, log)
    if why is not None:
        raise RewindRefused(why)
    release = driver.reserve_turn_admission()
    if release is None:
        raise RewindRefused(
            "cannot rewind now: a prompt is about to start its turn; wait for its reply"
        )
    try:
        log.append(SessionRewind(after=point.after, prompt=point.turn))
        log.flush()
    finally:
        release()
    return point.text


def last_point(log: SessionLog) -> RewindPoint | None:
    """The newest prompt on the thread's line (what `/edit` opens), read from the end;
    its `number` is 0 (not counted against the other branches). None: no prompt yet."""
    texts: dict[int, str] = {}
    for event in reversed(log.events):
        kind = type(event)
        if kind is UserMessage and event.item_id is not None:  # type: ignore[union-attr]
            texts[event.item_id] = event.text  # type: ignore[union-attr]
        elif kind is TurnStart and event.items:  # type: ignore[union-attr]
            turn: TurnStart = event  # type: ignore[assignment]
            text = "\n\n".join(texts.get(item, "") for item in turn.items).strip()
            if text:
                after = _branch_point(log.file_events, deque(), turn)
                return RewindPoint(0, turn.seq, after, text, turn.ts, True)
    return None


def resend(driver: Driver, log: SessionLog, turn: int, text: str) -> InboxItemId:
    """`/edit` sent: the prompt of turn `turn`, still the newest, is replaced by `text`;
    the exchange it began stays in the log as a branch. One line does both (a rewind
    that carries the text: `Driver.resend`), so nothing typed is lost to a kill.

    RewindRefused when it is no longer the newest prompt or a rewind cannot happen now;
    OSError or DriverClosedError when the line could not be written. Either way nothing
    changed and the caller still holds the text.
    """
    point = last_point(log)
    if point is None or point.turn != turn:
        raise RewindRefused(
            "not sent: the last prompt is no longer the one /edit opened"
            " (/edit again, or send this as a new prompt)"
        )
    why = refusal(driver, log)
    if why is not None:
        raise RewindRefused(why.replace("cannot rewind", "cannot replace the last exchange", 1))
    item = driver.resend(point.after, point.turn, text)
    if item is None:
        raise RewindRefused(
            "cannot replace the last exchange now: a prompt is about to start its turn;"
            " wait for its reply"
        )
    return item


def choose(log: SessionLog, number: int, listed: list[RewindPoint] | None = None) -> RewindPoint:
    """The point `/rewind N` names (among `listed`, or `points(log)`), or why there is none."""
    listed = points(log) if listed is None else listed
    if not listed:
        raise RewindRefused("nothing to rewind to yet: this thread has no prompts")
    if not 1 <= number <= len(listed):
        raise RewindRefused(f"no prompt {number}: /rewind lists 1 to {len(listed)}")
    return listed[number - 1]
