"""The thread's line: the events the thread is made of now, after any rewinds.

The log is append-only, so a rewind cannot remove the future it abandons;
it appends `session/rewind` instead, and the thread becomes a tree. Each
event's parent is the event before it in the file, except a rewind's, which
is the event it names (`after`; 0 is the empty start). The line is the path
from the root to the newest event: every reader that derives state from the
log (the surface, the inbox restore, the brackets, the archive references,
the notes, the transcript) reads the line, so none of them needs to know
about branches. Along a line seqs still increase, but they are no longer
contiguous: a reader must never take `events[i].seq == i + 1` for granted.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.events import LogEvent, SessionRewind


def parent_seq(event: LogEvent) -> int:
    """The seq of the event this one follows on its line (0: the empty start).

    A rewind that names no earlier event (malformed: `after` at or past its own
    seq, or negative) is read as an ordinary event, so a bad line never loops.
    """
    if type(event) is SessionRewind:
        after = event.after
        if 0 <= after < event.seq:
            return after
    return event.seq - 1


def _index(events: Sequence[LogEvent]) -> dict[int, int]:
    return {event.seq: index for index, event in enumerate(events)}


def current_line(events: Sequence[LogEvent]) -> list[LogEvent]:
    """The path from the root to the newest event, oldest first (`events` in file order).

    A file without a rewind is its own line; the same list comes back then.
    """
    if not has_rewinds(events):
        return events if isinstance(events, list) else list(events)
    return line_to(events, events[-1].seq)


def line_to(events: Sequence[LogEvent], seq: int) -> list[LogEvent]:
    """The path from the root to event `seq` (inclusive; 0 gives the empty line)."""
    where = _index(events)
    line: list[LogEvent] = []
    index = where.get(seq)
    while index is not None:
        event = events[index]
        line.append(event)
        index = where.get(parent_seq(event))
    line.reverse()
    return line


def has_rewinds(events: Sequence[LogEvent]) -> bool:
    """Whether the thread ever branched (else every event is on the line)."""
    return any(type(event) is SessionRewind for event in events)
