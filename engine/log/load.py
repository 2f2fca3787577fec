"""Opening a log: from its end when a resume index stands for its first bytes, else whole.

From the end (`engine.log.resume`): the index gives the state of the line and where
each stride of lines starts; only the lines after what it covers are read and
decoded (none, after a clean exit), and the newest `WINDOW` events are read for
whoever shows the thread. Older events are read from the file when asked for
(engine.log.event_list). Cold (no usable index): every line is read once, a chunk
at a time, into the same state and index, holding no more than a chunk's events and
the newest (engine.log.cold); the writer then writes the resume index.

Either way the result says the same about the file's tail: a torn last line, or
the first bad line after which nothing loads, for the writer to repair.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from msgspec import Struct

from engine.events import LogEvent, SessionRewind
from engine.log import cold, resume
from engine.log.cold import Fold
from engine.log.event_list import FileEvents, StoredEvents
from engine.log.index import LogIndex
from engine.log.line_codec import LogCorruptError, decode_lines
from engine.log.log_file import open_log, read_to_hole, reopen_log
from engine.log.replay import careful, lines_of, read_events
from engine.log.resume import Attachment
from engine.log.state import FileFacts, LineState
from engine.util.collector import paused_gc

WINDOW = 256
"""Events held in memory from the end of a log opened from its resume index: what a
front end shows first (its opening screenful and more) without reading the file again."""


class Loaded(Struct):
    """A log as its open found it (see `engine.log.replay.LoadResult` for the tail)."""

    events: FileEvents
    index: LogIndex
    """Caught up to the events' bytes when opened from the end; empty when read whole."""
    state: LineState | None = None
    """The line's state (None: read whole, to be replayed from `events`)."""
    facts: FileFacts | None = None
    kept: int = 0
    """Events the resume index covered (0: none was used)."""
    attachment: Attachment | None = None
    rewound: bool = False
    """A rewind among the lines after the index: the line must be found again."""
    torn: str | None = None
    good_bytes: int = 0
    from_snapshot: int = 0
    """Events decoded from the replay snapshot (a whole read; a one-pass open reads the lines
    and leaves the snapshot to whole readers: engine.log.replay)."""
    damage: LogCorruptError | None = None
    not_regular: str | None = None
    cold: bool = False
    """Read in one pass for want of a usable resume index (engine.log.cold): the writer
    writes one."""


def load(path: Path, fold: Callable[[], Fold] | None = None) -> Loaded:
    """The log at `path`, from its end if its resume index allows, else in one pass that
    holds no more than a chunk of its events (engine.log.cold), with `fold` (the surface)
    folded as it goes. What is not a regular file is reported as a whole read does."""
    with paused_gc():
        opened = _from_index(path)
        if opened is not None:
            return opened
        passed = _cold(path, fold)
        if passed is not None:
            return passed
        whole = read_events(path)
    return Loaded(
        FileEvents(whole.events),
        LogIndex(),
        torn=whole.torn,
        good_bytes=whole.good_bytes,
        from_snapshot=whole.from_snapshot,
        damage=whole.damage,
        not_regular=whole.not_regular,
    )


def _cold(path: Path, fold: Callable[[], Fold] | None) -> Loaded | None:
    try:
        with open_log(path) as fh:
            found, events = cold.read(path, fh, WINDOW, fold)
    except (OSError, LogCorruptError):  # not there, not a regular file, or changed under
        return None  # the pass: the whole read says so
    return Loaded(
        events,
        found.index,
        found.state,
        found.facts,
        kept=len(events) if found.attachment is not None else 0,
        attachment=found.attachment,
        torn=found.torn,
        good_bytes=found.good_bytes,
        damage=found.damage,
        cold=True,
    )


def _from_index(path: Path) -> Loaded | None:
    try:
        with open_log(path) as fh:
            kept = resume.load(path, fh)
            if kept is None:
                return None
            try:
                return _after(path, fh, kept)
            except BaseException:
                kept.attachment.close()
                raise
    except OSError:
        return None


def _after(path: Path, log: BinaryIO, kept: resume.Kept) -> Loaded | None:
    """The kept index and state, extended by the lines after what it covers (None: the
    whole read must say where loading ends)."""
    index, state, facts = kept.index, kept.state, kept.facts
    covered, count = index.size, index.count
    data, size = read_to_hole(log, covered)
    if covered + len(data) < size:
        kept.attachment.close()
        return None  # a hole after the index: the whole read says where loading ends
    lines, torn, cut = lines_of(path, data, count)
    parsed = decode_lines(lines, first_seq=count + 1)
    damage: LogCorruptError | None = None
    good = cut
    if parsed is None:
        parsed, good, damage = careful(path, data, cut, count)
        torn = None if damage is not None else torn
    offset = covered
    for _ in parsed:  # whole lines, as they were decoded
        end = data.index(b"\n", offset - covered) + covered + 1
        index.add(data[offset - covered : end - covered], offset)
        offset = end
    rewound = False
    for event in parsed:
        state.apply(event)
        facts.apply(event)
        rewound = rewound or type(event) is SessionRewind
    total = count + len(parsed)
    held_from = min(count, max(0, total - WINDOW))
    stored = StoredEvents(path, index, reopen_log(log))
    try:
        held: list[LogEvent] = stored.events(held_from, count)
    except LogCorruptError:  # damaged since the index was made: the whole read finds it
        stored.close()
        kept.attachment.close()
        return None
    held.extend(parsed)
    return Loaded(
        FileEvents(held, held_from, stored),
        index,
        state,
        facts,
        kept=count,
        attachment=kept.attachment,
        rewound=rewound,
        torn=torn,
        good_bytes=covered + good,
        damage=damage,
    )
