"""The log's events as sequences that read older events from the file on demand.

`FileEvents` is every event of the file in seq order: the newest are held in memory
(those an open read, and every one appended since), the older ones are read from the
file when something asks for them, a stride of lines at a time, at the offsets of the
log's index (engine.log.index). `LineEvents` is the thread's line after rewinds
(engine.log.line): runs of the file's events.

Reading an older event is file I/O: a reader on a UI loop asks for what it shows (a
screenful), and anything that walks the whole thread (an export, the rewind list)
runs in a worker. A line found unreadable there (the file was damaged after it was
indexed) raises `LogCorruptError`, naming the line.
"""

from __future__ import annotations

import bisect
import io
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, overload

from engine.events import LogEvent
from engine.log.index import STRIDE, LogIndex
from engine.log.line_codec import LogCorruptError, decode_lines, parse_line

ITER_STRIDES = 16
"""Strides read at a time by an iteration over older events."""
KEPT_STRIDES = 32
"""Strides of older events kept decoded (the most recently read)."""


class StoredEvents:
    """Reads events `[0, count)` of the log from its file, at the index's offsets."""

    def __init__(self, path: Path, index: LogIndex, fh: BinaryIO) -> None:
        self.path = path
        self.index = index
        self._fh: BinaryIO | None = fh
        self._closer = weakref.finalize(self, fh.close)
        """Whoever holds the events may read them after the log closed: the file is
        closed with this object."""
        self._lock = threading.Lock()
        self._kept: OrderedDict[int, list[LogEvent]] = OrderedDict()
        self.reads = 0
        """Reads made from the file (what tests count)."""
        self.on_damage: Callable[[LogCorruptError], None] | None = None
        """Told of a line found unreadable, before the error is raised (from whatever
        thread read it)."""

    def use(self, index: LogIndex, fh: BinaryIO) -> None:
        """Read another file from now on (the log written out again): its index and the
        file open for reading it. The old one is closed."""
        with self._lock:
            old, self._fh, self.index = self._closer, fh, index
            self._closer = weakref.finalize(self, fh.close)
            self._kept.clear()
        old()

    def close(self) -> None:
        with self._lock:
            self._fh = None
            self._closer()

    def event(self, i: int) -> LogEvent:
        stride = i // STRIDE
        with self._lock:
            events = self._kept.get(stride)
            if events is not None:
                self._kept.move_to_end(stride)
        if events is None:
            events = self._strides(stride, stride)
            with self._lock:
                self._kept[stride] = events
                while len(self._kept) > KEPT_STRIDES:
                    self._kept.popitem(last=False)
        return events[i - stride * STRIDE]

    def events(self, start: int, stop: int) -> list[LogEvent]:
        """Events `[start, stop)` (all of them older than what is held)."""
        if start >= stop:
            return []
        first, last = start // STRIDE, (stop - 1) // STRIDE
        events = self._strides(first, last)
        return events[start - first * STRIDE : stop - first * STRIDE]

    def _strides(self, first: int, last: int) -> list[LogEvent]:
        try:
            return self._decoded(first, last)
        except LogCorruptError as exc:
            if self.on_damage is not None:
                self.on_damage(exc)
            raise

    def _decoded(self, first: int, last: int) -> list[LogEvent]:
        start, end = self.index.stride_span(first, last)
        data = self._read(start, end)
        seq = first * STRIDE + 1
        parsed = decode_lines(io.BytesIO(data), first_seq=seq)
        if parsed is not None:
            return parsed
        out: list[LogEvent] = []
        for line in io.BytesIO(data):
            out.append(parse_line(self.path, seq, line.rstrip(b"\n")))
            seq += 1
        return out

    def _read(self, start: int, end: int) -> bytes:
        with self._lock:
            self.reads += 1
            data = b""
            try:
                if self._fh is not None:
                    self._fh.seek(start)
                    data = self._fh.read(end - start)
            except (OSError, ValueError) as exc:
                raise LogCorruptError(self.path, 0, f"could not be read: {exc}") from None
            if len(data) < end - start:
                raise LogCorruptError(
                    self.path,
                    0,
                    f"holds {start + len(data):,} bytes where Trove indexed {end:,}: "
                    "it was cut after it was read",
                )
        return data


class FileEvents(Sequence[LogEvent]):
    """Every event of the file in seq order (index i is seq i + 1): the newest held, the
    older read through `stored`. Without `stored`, every event is held."""

    def __init__(
        self,
        held: list[LogEvent] | None = None,
        held_from: int = 0,
        stored: StoredEvents | None = None,
    ) -> None:
        self._held: list[LogEvent] = held if held is not None else []
        self._from = held_from
        self.stored = stored

    @property
    def held_from(self) -> int:
        """The first event held in memory (0: all of them are)."""
        return self._from

    def held(self) -> list[LogEvent]:
        """The events held in memory (the newest): `self[held_from:]`, not a copy."""
        return self._held

    def __len__(self) -> int:
        return self._from + len(self._held)

    @overload
    def __getitem__(self, key: int) -> LogEvent: ...
    @overload
    def __getitem__(self, key: slice) -> list[LogEvent]: ...
    def __getitem__(self, key: int | slice) -> LogEvent | list[LogEvent]:
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return self.read(start, stop)
        count = len(self)
        i = key + count if key < 0 else key
        if not 0 <= i < count:
            raise IndexError("log event index out of range")
        if i >= self._from:
            return self._held[i - self._from]
        assert self.stored is not None
        return self.stored.event(i)

    def read(self, start: int, stop: int) -> list[LogEvent]:
        """Events `[start, stop)` as a list (older ones read from the file)."""
        out: list[LogEvent] = []
        if start < self._from and start < stop:
            assert self.stored is not None
            out = self.stored.events(start, min(stop, self._from))
        if stop > self._from:
            out.extend(self._held[max(0, start - self._from) : stop - self._from])
        return out

    def __iter__(self) -> Iterator[LogEvent]:
        count = len(self)
        position = 0
        step = ITER_STRIDES * STRIDE
        while position < min(count, self._from):
            chunk = self.read(position, min(count, self._from, position + step))
            yield from chunk
            position += len(chunk)
        held = self._held
        for j in range(position - self._from, count - self._from):
            yield held[j]

    def __reversed__(self) -> Iterator[LogEvent]:
        held = self._held
        for j in range(len(held) - 1, -1, -1):
            yield held[j]
        position = self._from
        for step in _growing():
            if position <= 0:
                break
            begin = max(0, position - step)
            yield from reversed(self.read(begin, position))
            position = begin

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        if len(self) != len(other):
            return False
        if self._from == 0 and isinstance(other, list):
            return self._held == other
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<FileEvents of {len(self)} ({len(self._held)} held)>"

    def append(self, event: LogEvent) -> None:
        self._held.append(event)

    def gather(self, indices: Sequence[int]) -> list[LogEvent]:
        """The events at `indices` (ascending), older ones read a run of strides at a time."""
        out: list[LogEvent] = []
        at = 0
        while at < len(indices):
            i = indices[at]
            if i >= self._from:
                out.append(self._held[i - self._from])
                at += 1
                continue
            # The older indices within the next few strides: one read.
            limit = min(self._from, (i // STRIDE + ITER_STRIDES) * STRIDE)
            end = bisect.bisect_left(indices, limit, at)
            chunk = self.read(i, indices[end - 1] + 1)
            out.extend(chunk[j - i] for j in indices[at:end])
            at = end
        return out


def _growing() -> Iterator[int]:
    """Events read at a time by a walk back from the end: one stride, then twice as many
    each time up to `ITER_STRIDES` strides, so a walk that stops a few events back (the
    last prompt, the last reply) reads a stride at most, and a long one reads in bulk."""
    step = STRIDE
    while True:
        yield step
        step = min(step * 2, ITER_STRIDES * STRIDE)


def line_runs(last: int, rewinds: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The line from the start to event `last` as runs of seqs (first, last), oldest first.

    `rewinds` are the file's rewinds that name an earlier event, (seq, after), in seq
    order: a rewind's parent is the event it names, any other event's the one before.
    """
    seqs = [seq for seq, _ in rewinds]
    runs: list[tuple[int, int]] = []
    current = last
    while current > 0:
        at = bisect.bisect_right(seqs, current) - 1
        if at < 0:
            runs.append((1, current))
            break
        seq, after = rewinds[at]
        runs.append((seq, current))
        current = after
    runs.reverse()
    return runs


class LineEvents(Sequence[LogEvent]):
    """The events of the thread's line: `runs` of the file's events, oldest first."""

    def __init__(self, file: FileEvents, runs: list[tuple[int, int]]) -> None:
        self.file = file
        self.runs = runs
        self._starts: list[int] = []
        total = 0
        for first, last in runs:
            self._starts.append(total)
            total += last - first + 1
        self._count = total

    def __len__(self) -> int:
        return self._count

    def contains_seq(self, seq: int) -> bool:
        """Whether event `seq` of the file is on this line."""
        at = bisect.bisect_right(self.runs, (seq, sys.maxsize)) - 1
        return at >= 0 and self.runs[at][0] <= seq <= self.runs[at][1]

    def _seq(self, i: int) -> int:
        at = bisect.bisect_right(self._starts, i) - 1
        return self.runs[at][0] + i - self._starts[at]

    @overload
    def __getitem__(self, key: int) -> LogEvent: ...
    @overload
    def __getitem__(self, key: slice) -> list[LogEvent]: ...
    def __getitem__(self, key: int | slice) -> LogEvent | list[LogEvent]:
        if isinstance(key, slice):
            start, stop, step = key.indices(self._count)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return self.read(start, stop)
        i = key + self._count if key < 0 else key
        if not 0 <= i < self._count:
            raise IndexError("line event index out of range")
        return self.file[self._seq(i) - 1]

    def read(self, start: int, stop: int) -> list[LogEvent]:
        out: list[LogEvent] = []
        for (first, last), begins in zip(self.runs, self._starts, strict=True):
            lo, hi = max(start, begins), min(stop, begins + last - first + 1)
            if lo < hi:
                out.extend(self.file.read(first - 1 + lo - begins, first - 1 + hi - begins))
        return out

    def __iter__(self) -> Iterator[LogEvent]:
        count = self._count
        step = ITER_STRIDES * STRIDE
        for position in range(0, count, step):
            yield from self.read(position, min(count, position + step))

    def __reversed__(self) -> Iterator[LogEvent]:
        position = self._count
        for step in _growing():
            if position <= 0:
                break
            begin = max(0, position - step)
            yield from reversed(self.read(begin, position))
            position = begin

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def append(self, event: LogEvent) -> None:
        """`event` was appended to the file (the file's list has it already): it ends the
        line."""
        first, last = self.runs[-1] if self.runs else (event.seq, event.seq - 1)
        if last + 1 != event.seq:
            raise ValueError(f"event {event.seq} does not follow the line's end ({last})")
        if self.runs:
            self.runs[-1] = (first, event.seq)
        else:
            self.runs.append((first, event.seq))
            self._starts.append(0)
        self._count += 1
