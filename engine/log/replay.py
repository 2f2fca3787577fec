"""Replay: reading a whole log file back as typed events, and finding a torn tail.

A torn last line (no trailing newline: a crash cut the write short) is
reported, not raised. Any other bad line (one that does not decode, has the
wrong shape, or breaks the seq order 1, 2, 3 …) ends what loads: the events
before it, the log's consistent prefix, are returned with the bad line named
(`LoadResult.damage`, `file:line`). So does a hole (a file extended past its
data: only zeros there, which no line holds), where reading stops, and so
does something other than a regular file under the log's name (nothing of it
is read: engine.log.log_file). Reading never changes the file; moving the
rest aside is the writer's (`SessionLog.open`).
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterator
from pathlib import Path

from msgspec import Struct

from engine.events import LogEvent
from engine.log import snapshot
from engine.log.line_codec import LogCorruptError, decode_lines, parse_line
from engine.log.log_file import NotRegularError, open_log, read_to_hole
from engine.util.collector import paused_gc


class LoadResult(Struct):
    events: list[LogEvent]
    """The log's consistent prefix: every event up to the first bad line (all of them
    when there is none)."""
    torn: str | None
    """The report of a torn last line (None with `damage`: the rest holds it)."""
    good_bytes: int
    """The bytes `events` take at the start of the file: what stays after a repair."""
    from_snapshot: int = 0
    """How many of the events the snapshot gave (0: every line was decoded)."""
    damage: LogCorruptError | None = None
    """The first bad line (not a torn tail), which ends the prefix; None: none."""
    not_regular: str | None = None
    """What lies under the log's name when it is not a regular file (`damage` says so at
    line 1, nothing is loaded); the writer moves it aside whole."""


def read_events(path: Path) -> LoadResult:
    """Parse a log file: its consistent prefix, a torn last line reported, the first
    other bad line named in `damage` (never raised).

    A long log's snapshot (engine.log.snapshot) stands for the lines it covers
    when it is sealed to exactly the bytes the log begins with; the lines after
    it, and every line when there is no usable snapshot, are decoded here.
    """
    with paused_gc():
        resumed = _read_after_snapshot(path)
        if resumed is not None:
            return resumed
        try:
            return _read_events(path)
        except NotRegularError as exc:
            damage = LogCorruptError(path, 1, exc.strerror or "not a regular file")
            return LoadResult([], None, 0, damage=damage, not_regular=exc.what)


def _read_after_snapshot(path: Path) -> LoadResult | None:
    """The snapshot's events and the log's lines after them, from one open of the log
    (None: no snapshot stands for the log's first bytes, or a line after them is not a
    plain event in order: the whole file is read the careful way, which keeps an
    unknown kind or finds where the consistent prefix ends)."""
    try:
        with open_log(path) as fh:
            kept = snapshot.load(path, fh)
            if kept is None:
                return None
            data, size = read_to_hole(fh, kept.covered)
    except OSError:
        return None
    if kept.covered + len(data) < size:
        return None  # a hole: the careful read says where what loads ends
    before = len(kept.events)
    lines, torn, cut = lines_of(path, data, before)
    parsed = decode_lines(lines, first_seq=before + 1)
    if parsed is None:
        return None
    events = kept.events
    events.extend(parsed)
    return LoadResult(events, torn, kept.covered + cut, before)


def lines_of(path: Path, data: bytes, before: int) -> tuple[Iterator[bytes], str | None, int]:
    """The whole lines of `data` (the log after its first `before` lines), a report of a
    torn last line if there is one, and how many bytes the whole lines take."""
    cut = data.rfind(b"\n") + 1
    tail = data[cut:]
    torn: str | None = None
    # Lines one at a time off a buffer sharing the file's bytes: each line is
    # freed as soon as it is decoded, where a split would hold a second copy of
    # the file in small objects, for good (the allocator's arenas stay fragmented
    # under the events that outlive them).
    lines: Iterator[bytes] = io.BytesIO(data)
    if tail.strip():
        # No trailing newline: the write was cut short by a crash.
        count = data.count(b"\n")
        torn = (
            f"{path}:{before + count + 1}: ignored a torn last line "
            f"({len(tail)} bytes) left by an interrupted write"
        )
        lines = itertools.islice(lines, count)
    elif tail:
        lines = itertools.islice(lines, data.count(b"\n"))  # blanks after the last line: ignored
    return lines, torn, cut


def _read_events(path: Path) -> LoadResult:
    try:
        with open_log(path) as fh:
            data, size = read_to_hole(fh, 0)
    except FileNotFoundError:
        data, size = b"", 0
    lines, torn, cut = lines_of(path, data, 0)
    parsed = decode_lines(lines)
    if parsed is not None and len(data) == size:
        return LoadResult(parsed, torn, cut)
    if parsed is None:
        events, good, damage = careful(path, data, cut)
        if damage is not None:
            return LoadResult(events, None, good, damage=damage)
    else:
        events = parsed
    if len(data) < size:  # the line after the last whole one runs into a hole
        hole = LogCorruptError(
            path,
            len(events) + 1,
            f"a hole of zero bytes where a line should be ({size - cut:,} bytes from here "
            "to the end of the file)",
        )
        return LoadResult(events, None, cut, damage=hole)
    return LoadResult(events, torn, cut)


def careful(
    path: Path, data: bytes, cut: int, before: int = 0
) -> tuple[list[LogEvent], int, LogCorruptError | None]:
    """The whole lines of `data[:cut]` (the log after its first `before` lines) one at a
    time, up to the first bad one: their events, the bytes those take, and the bad line's
    error (None: every line is good; a kind this code does not know is kept)."""
    events: list[LogEvent] = []
    offset = 0
    lineno = before
    while offset < cut:
        end = data.index(b"\n", offset)
        lineno += 1
        try:
            events.append(parse_line(path, lineno, data[offset:end]))
        except LogCorruptError as exc:
            return events, offset, exc
        offset = end + 1
    return events, offset, None
