"""What a rewind changes of the thread's line: the events it takes off, the ones it puts on.

A rewind moves the thread from one path of the log's tree to another (engine.log.line).
The two share their events up to a common one, the `ancestor`; the old line goes on
past it with `dropped`, the new one with `added` (then the rewind). Whatever holds
state folded from the line (the line's state, the surface) need not fold the new line
from its start: it takes back what `dropped` did and folds `added` in. For /retry,
/edit and an undone retry that is the last exchange or two, whatever the thread's
length; a rewind that goes a long way back or across (more than `LIMIT` events either
way) gives no change, and the line is folded again from its start.

Everything here is found from the file's rewinds (the lines' runs of seqs) and the
events in those two stretches, read by seq: the newest are held, older ones are read
from the file a stride at a time (engine.log.event_list).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from engine.events import LogEvent

LIMIT = 4096
"""Events dropped or added beyond which a rewind's line is folded again from its start."""

Runs = list[tuple[int, int]]
"""A line as runs of seqs (first, last), oldest first (`engine.log.event_list.line_runs`)."""


class LineChange:
    """One rewind's change of the line (see the module docstring)."""

    __slots__ = ("_file", "added", "ancestor", "dropped", "prefix")

    def __init__(
        self,
        file: Sequence[LogEvent],
        ancestor: int,
        prefix: Runs,
        dropped: list[LogEvent],
        added: list[LogEvent],
    ) -> None:
        self._file = file
        self.ancestor = ancestor
        """The newest event both lines hold (0: they share nothing)."""
        self.prefix = prefix
        """The runs of the line up to `ancestor`, the part the lines share."""
        self.dropped = dropped
        """The old line's events after `ancestor`, oldest first."""
        self.added = added
        """The new line's events after `ancestor` (the rewind not among them), oldest first."""

    def earlier(self) -> Iterator[LogEvent]:
        """The shared events, newest first (`ancestor` first), read one at a time: a caller
        looking back a few events reads no more than those."""
        file = self._file
        for first, last in reversed(self.prefix):
            for seq in range(last, first - 1, -1):
                yield file[seq - 1]


def line_change(
    file: Sequence[LogEvent], old: Runs, new: Runs, *, limit: int = LIMIT
) -> LineChange | None:
    """The change from line `old` to line `new` (both as runs, `new` without the rewind),
    or None when more than `limit` events are dropped or added."""
    ancestor = _last_shared(old, new)
    dropped = _after(old, ancestor)
    added = _after(new, ancestor)
    if _count(dropped) > limit or _count(added) > limit:
        return None
    prefix = [(first, min(last, ancestor)) for first, last in new if first <= ancestor]
    return LineChange(file, ancestor, prefix, _read(file, dropped), _read(file, added))


def _last_shared(old: Runs, new: Runs) -> int:
    """The highest seq on both lines (0: none). Two paths from the root share a prefix, so
    it is where that prefix ends; the runs are walked side by side."""
    shared = 0
    i = j = 0
    while i < len(old) and j < len(new):
        low = max(old[i][0], new[j][0])
        high = min(old[i][1], new[j][1])
        if low <= high:
            shared = max(shared, high)
        if old[i][1] < new[j][1]:
            i += 1
        else:
            j += 1
    return shared


def _after(runs: Runs, seq: int) -> Runs:
    return [(max(first, seq + 1), last) for first, last in runs if last > seq]


def _count(runs: Runs) -> int:
    return sum(last - first + 1 for first, last in runs)


def _read(file: Sequence[LogEvent], runs: Runs) -> list[LogEvent]:
    events: list[LogEvent] = []
    for first, last in runs:
        events.extend(file[first - 1 : last])
    return events
