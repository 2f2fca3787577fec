"""The events a transcript shows: the thread's events as they were when it was loaded,
then each one pushed to it, without a copy of the first part.

A long thread's older events are not in memory (engine.log.event_list): copying
them to a list of the transcript's own would read the whole log from its file. This
view reads through to the engine's sequence for what it was given (older events
come from the file when asked for: a screenful at a time) and keeps what is pushed
after in a list of its own, so it never sees an event twice.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import overload

from engine.events import LogEvent


class ShownEvents(Sequence[LogEvent]):
    def __init__(self, given: Sequence[LogEvent] = ()) -> None:
        self._given: Sequence[LogEvent] = given
        self._count = len(given)
        self._pushed: list[LogEvent] = []

    def __len__(self) -> int:
        return self._count + len(self._pushed)

    @overload
    def __getitem__(self, key: int) -> LogEvent: ...
    @overload
    def __getitem__(self, key: slice) -> list[LogEvent]: ...
    def __getitem__(self, key: int | slice) -> LogEvent | list[LogEvent]:
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            out = list(self._given[start : min(stop, self._count)]) if start < self._count else []
            if stop > self._count:
                out.extend(self._pushed[max(0, start - self._count) : stop - self._count])
            return out
        i = key + len(self) if key < 0 else key
        if not 0 <= i < len(self):
            raise IndexError("transcript event index out of range")
        return self._given[i] if i < self._count else self._pushed[i - self._count]

    def __iter__(self) -> Iterator[LogEvent]:
        pushed = len(self._pushed)
        yield from itertools.islice(self._given, self._count)
        yield from self._pushed[:pushed]

    def append(self, event: LogEvent) -> None:
        self._pushed.append(event)
