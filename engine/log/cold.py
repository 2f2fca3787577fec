"""A cold open: a log with no usable resume index, read once in bounded memory.

A log from before the index, a crash before it was written, a log copied in or an
index set aside: the log is read a chunk of lines at a time, and each chunk is folded
as it goes into what an open from the index would have found (engine.log.resume): the
index of where lines start and the blocks' digests, the file's facts, the line's state,
the surface (a `Fold` the layer above gives, kept as the index keeps it) and the newest
`WINDOW` events. No more than a chunk's events and the window are held at once,
however long the log; older events are read from the file when asked for
(engine.log.event_list), and the writer then writes the resume index
(`SessionLog.open`), so the next open reads the log's end only.

What the load says of the file's tail is what a whole read says (engine.log.replay):
a torn last line, the first bad line (its chunk is read the careful way, which also
keeps a kind this code does not know), a hole. A rewind makes the line a path through
the file: the folds that follow the line are folded again over it, read from the file
through the index a few strides at a time, after the pass.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, BinaryIO, Protocol

from engine.events import LogEvent
from engine.log.event_list import FileEvents, LineEvents, StoredEvents, line_runs
from engine.log.index import LogIndex
from engine.log.line_codec import LogCorruptError, decode_lines
from engine.log.log_file import reopen_log
from engine.log.replay import careful, lines_of
from engine.log.resume import Attachment, spilled
from engine.log.state import FileFacts, LineState

CHUNK = 1 << 18
"""Bytes of the log read and decoded at a time."""


class Fold(Protocol):
    """What the layer above folds of the line as it is read (the surface)."""

    def take(self, events: Iterable[LogEvent]) -> None:
        """The line's next events, in order."""

    def finish(self, events: int) -> tuple[bytes, IO[bytes]]:
        """What the resume index keeps of the fold of the line's first `events` events:
        (head, a file holding the large part)."""

    def close(self) -> None:
        """Give the fold up (its files are removed)."""


class Cold:
    """What one pass over a log found (see `engine.log.load.Loaded` for the fields)."""

    def __init__(self) -> None:
        self.index = LogIndex()
        self.facts = FileFacts()
        self.state = LineState(drafts=[])
        self.window: list[LogEvent] = []
        self.torn: str | None = None
        self.damage: LogCorruptError | None = None
        self.good_bytes = 0
        self.attachment: Attachment | None = None
        self.most_held = 0
        """The most events held at once during the pass (a chunk's and the window: what
        tests check)."""


def read(
    path: Path,
    log: BinaryIO,
    window: int,
    fold: Callable[[], Fold] | None = None,
    *,
    chunk: int | None = None,
    follow: bool = True,
) -> tuple[Cold, FileEvents]:
    """One pass over the open log `log` (see the module docstring): what it found, and the
    file's events (the newest `window` held, the rest read through the index). Without
    `follow`, what follows the line is not folded again after a rewind (a check of the
    file: `trove doctor`)."""
    cold = Cold()
    folding = fold() if fold is not None else None
    try:
        _pass(path, log, cold, window, folding, chunk or CHUNK)
        count = cold.index.count
        stored = StoredEvents(path, cold.index, reopen_log(log))
        events = FileEvents(cold.window, count - len(cold.window), stored)
        if cold.facts.rewinds and follow:
            if folding is not None:
                folding.close()
                folding = fold() if fold is not None else None
            _follow_line(cold, events, folding)
        if folding is not None:
            head, body = folding.finish(count)
            folding = None
            try:
                cold.attachment = spilled(head, body)
            except BaseException:
                body.close()
                raise
    finally:
        if folding is not None:
            folding.close()
    return cold, events


def _pass(
    path: Path, log: BinaryIO, cold: Cold, window: int, fold: Fold | None, chunk: int
) -> None:
    fd = log.fileno()
    size = os.fstat(fd).st_size
    try:
        end = min(size, os.lseek(fd, 0, os.SEEK_HOLE))
    except OSError:
        end = size
    with _Digests(cold.index) as digests:
        _chunks(path, fd, cold, window, fold, chunk, end, size, digests)


def _chunks(
    path: Path,
    fd: int,
    cold: Cold,
    window: int,
    fold: Fold | None,
    chunk: int,
    end: int,
    size: int,
    digests: _Digests,
) -> None:
    index, state, facts = cold.index, cold.state, cold.facts
    held = cold.window
    read = 0  # bytes read
    at = 0  # bytes decoded: where `carry` begins
    carry = b""
    while True:
        piece = os.pread(fd, min(chunk, end - read), read) if read < end else b""
        read += len(piece)
        if not piece:
            cold.good_bytes = at
            _tail(path, cold, carry, size - at if end < size else None)
            return
        data = carry + piece if carry else piece
        cut = data.rfind(b"\n") + 1
        if not cut:
            carry = data
            continue
        whole = data[:cut] if cut < len(data) else data
        carry = data[cut:]
        lines = whole.split(b"\n")
        del lines[-1]  # after the last newline
        events = decode_lines(lines, first_seq=index.count + 1)
        damage: LogCorruptError | None = None
        if events is None:
            events, good, damage = careful(path, whole, cut, index.count)
            whole = whole[:good]
            del lines[len(events) :]
        index.feed_lines(lines, at)
        del lines
        digests.add(whole, at)
        at += len(whole)
        state.replay(events, facts)
        if fold is not None and not facts.rewinds:
            fold.take(events)
        cold.most_held = max(cold.most_held, len(events) + len(held))
        held.extend(events)
        if len(held) > window:
            del held[: len(held) - window]
        if damage is not None:
            cold.damage = damage
            cold.good_bytes = at
            return


class _Digests:
    """The blocks' digests made on a thread of their own, a chunk behind the decoding
    (hashlib lets go of the interpreter lock while it hashes): a chunk is handed over once
    the one before is digested, in order."""

    def __init__(self, index: LogIndex) -> None:
        self._index = index
        self._work: queue.SimpleQueue[tuple[bytes, int] | None] = queue.SimpleQueue()
        self._done = threading.Semaphore(1)
        self._failed: BaseException | None = None
        self._thread: threading.Thread | None = threading.Thread(
            target=self._run, name="trove-cold-digest", daemon=True
        )
        try:
            self._thread.start()
        except RuntimeError:  # no thread to be had: digested here instead
            self._thread = None

    def _run(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            try:
                if self._failed is None:
                    self._index.feed_digest(*item)
            except BaseException as exc:  # raised in the reader by `__exit__`
                self._failed = exc
            finally:
                self._done.release()

    def add(self, data: bytes, at: int) -> None:
        if self._thread is None:
            self._index.feed_digest(data, at)
            return
        self._done.acquire()  # the chunk before is digested
        self._work.put((data, at))

    def __enter__(self) -> _Digests:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._done.acquire()
            self._work.put(None)
            self._thread.join()
            self._done.release()
        if self._failed is not None:
            raise self._failed


def _tail(path: Path, cold: Cold, data: bytes, hole: int | None) -> None:
    """What follows the last whole line: nothing, blanks, a torn line, or (`hole`: the bytes
    from the last whole line to the end of the file) a line that runs into a hole."""
    count = cold.index.count
    if hole is not None:
        cold.damage = LogCorruptError(
            path,
            count + 1,
            f"a hole of zero bytes where a line should be ({hole:,} bytes from here "
            "to the end of the file)",
        )
    elif data.strip():
        _, cold.torn, _ = lines_of(path, data, count)


def _follow_line(cold: Cold, events: FileEvents, fold: Fold | None) -> None:
    """After a rewind: the folds that follow the line, again over the line's events (read
    from the file a few strides at a time)."""
    runs = line_runs(len(events), cold.facts.rewinds)
    line = LineEvents(events, runs)
    fresh = LineState(drafts=[])
    step = 1 << 12
    for start in range(0, len(line), step):
        part = line.read(start, min(len(line), start + step))
        fresh.replay(part)
        if fold is not None:
            fold.take(part)
    state = cold.state
    state.records, state.hidden = fresh.records, fresh.hidden
    state.draft, state.drafts = fresh.draft, fresh.drafts
