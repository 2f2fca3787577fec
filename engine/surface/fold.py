"""The surface folded as a log is read once, holding rows, not events: a cold open's.

A log opened with no usable resume index is read in one pass (engine.log.cold). This
fold takes its events a batch at a time and keeps what `Surface.from_events` would
build, as the rows the resume index keeps of it (engine.surface.kept): seq, role,
price, turn, tool-call ids. The events stay in the log, read by seq when the entries
are first used. A surface never compacted holds the whole thread: past `SPILL_AT` rows
the oldest are written to a temporary file, in the attachment's own chunks, so the
heap holds a few thousand rows whatever the thread's length. A checkpoint whose span
reaches the file rewrites it a chunk at a time; a withdrawal that reaches it takes the
newest chunk back.
"""

from __future__ import annotations

import os
import struct
import tempfile
from collections.abc import Iterable
from typing import IO

import msgspec

from engine.events import (
    AssistantMessage,
    Checkpoint,
    CompactSummary,
    EndSeed,
    LogEvent,
    ToolResult,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.surface.entry import user_entry
from engine.surface.kept import FORMAT, Head, Row, decode_rows, encode_rows, row_of
from engine.util.tool_cut import context_chars

SPILL_AT = 4096
"""Rows held before the oldest are written to the spill file."""
KEEP = 256
"""Rows kept on the heap when the rest are spilled (a withdrawal's look back)."""
_LENGTH = struct.Struct("<Q")
_USER, _ASSISTANT, _TOOL = 0, 1, 2
_ENCODER = msgspec.msgpack.Encoder()


class SurfaceFold:
    """`Surface.from_events` of the events given to `take`, kept as rows."""

    def __init__(self, *, spill_at: int = SPILL_AT, keep: int = KEEP) -> None:
        self.rows: list[Row] = []
        self._keep = max(0, keep)
        self._spill_at = max(spill_at, self._keep + 1)
        self._spill: IO[bytes] | None = None
        self._chunks: list[tuple[int, int]] = []
        """(offset, rows) of each chunk in the spill file, oldest first."""
        self.spilled = 0
        """Rows in the spill file."""
        self.most_rows = 0
        """The most rows held on the heap at once (what tests check)."""
        self.turn: int | None = None
        self.version = 0
        self.reshapes = 0
        self.tokens = 0
        self.newest = 0
        self.replacements: dict[int, list[int]] = {}

    def take(self, events: Iterable[LogEvent]) -> None:
        """Events of the line, in order (plain messages and turn markers on locals)."""
        rows = self.rows
        add = rows.append
        turn, tokens, version, newest = self.turn, self.tokens, self.version, self.newest
        for event in events:
            kind = type(event)
            # The rows of engine.surface.entry's builders, priced as they price them.
            if kind is AssistantMessage:
                size = len(event.content or "")  # type: ignore[union-attr]
                calls = event.tool_calls  # type: ignore[union-attr]
                if calls:
                    size += sum([len(c.name) + len(c.arguments or "{}") for c in calls])
                    ids = tuple([call.id for call in calls])
                elif not size:
                    continue
                else:
                    ids = ()
                price = (size + 3) // 4 + 4
                add((event.seq, _ASSISTANT, price, False, turn, ids, None))
            elif kind is ToolResult:
                price = (context_chars(event.content) + 3) // 4 + 4  # type: ignore[union-attr]
                add((event.seq, _TOOL, price, False, turn, (), event.call_id))  # type: ignore[union-attr]
            elif kind is UserMessage and event.checkpoint is None:  # type: ignore[union-attr]
                price = (len(event.text) + 3) // 4 + 4  # type: ignore[union-attr]
                add((event.seq, _USER, price, False, turn, (), None))
            else:
                if kind is TurnStart:
                    turn = event.turn  # type: ignore[union-attr]
                elif kind is EndSeed:
                    turn = None
                elif kind is TurnEnd:
                    turn = None
                    if event.withdrawn:  # type: ignore[union-attr]
                        self.tokens, self.version = tokens, version
                        self._withdraw(event.withdrawn)  # type: ignore[union-attr]
                        tokens, version, rows = self.tokens, self.version, self.rows
                        add = rows.append
                elif kind is CompactSummary:
                    self.replacements[event.seq] = list(event.replaced or ())  # type: ignore[union-attr]
                elif kind is UserMessage:  # a checkpoint
                    self.tokens, self.version = tokens, version
                    self._checkpoint(event, turn)  # type: ignore[arg-type]
                    tokens, version, newest = self.tokens, self.version, self.newest
                    rows = self.rows
                    add = rows.append
                continue
            tokens += price
            version += 1
            newest = event.seq
            if len(rows) >= self._spill_at:
                self.most_rows = max(self.most_rows, len(rows))
                self._spill_oldest()
        self.turn, self.tokens, self.version, self.newest = turn, tokens, version, newest
        self.most_rows = max(self.most_rows, len(self.rows))

    # -- the spill file -------------------------------------------------------------------

    def _file(self) -> IO[bytes]:
        if self._spill is None:
            self._spill = tempfile.TemporaryFile(prefix="trove-surface-")  # noqa: SIM115 (kept)
        return self._spill

    def _spill_oldest(self) -> None:
        rows = self.rows
        out = rows[: len(rows) - self._keep]
        fh = self._file()
        fh.seek(0, os.SEEK_END)
        self._chunks.append((fh.tell(), len(out)))
        fh.write(encode_rows(out))
        self.spilled += len(out)
        del rows[: len(out)]

    def _chunk(self, offset: int) -> list[Row]:
        assert self._spill is not None
        fh = self._spill
        fh.seek(offset)
        (size,) = _LENGTH.unpack(fh.read(_LENGTH.size))
        return decode_rows(fh.read(size))

    def _take_back(self) -> int:
        """The newest spilled chunk back on the heap, before the rows held; its rows (0:
        nothing is spilled)."""
        if not self._chunks:
            return 0
        offset, count = self._chunks.pop()
        back = self._chunk(offset)
        assert self._spill is not None
        self._spill.flush()
        self._spill.truncate(offset)
        self.spilled -= count
        self.rows[:0] = back
        return len(back)

    # -- what reshapes the surface ----------------------------------------------------------

    def _withdraw(self, seqs: tuple[int, ...]) -> None:
        """`Surface._withdraw` on rows: back from the end, spilled chunks taken back as the
        look reaches them."""
        wanted = set(seqs)
        oldest = min(wanted)
        rows = self.rows
        removed = tokens = 0
        at = len(rows) - 1
        while wanted:
            if at < 0:
                back = self._take_back()
                if not back:
                    break
                rows = self.rows
                at = back - 1
                continue
            seq, role, price, checkpoint = rows[at][:4]
            if seq in wanted and role == _USER and not checkpoint:
                wanted.discard(seq)
                removed += 1
                tokens += price
                del rows[at]
            elif seq < oldest and not checkpoint:
                break
            at -= 1
        if removed:
            self.tokens -= tokens
            self.version += 1
            self.reshapes += 1

    def _checkpoint(self, event: UserMessage, turn: int | None) -> None:
        """`Surface._place_checkpoint` on rows: the replaced rows go, the checkpoint stands
        where the first of them stood (at the end when none is found)."""
        checkpoint: Checkpoint = event.checkpoint  # type: ignore[assignment]
        entry = user_entry(event, turn)
        row = row_of(entry)
        replaced = self.replacements.pop(checkpoint.summary or 0, None) or []
        wanted = set(replaced)
        held = sum(1 for r in self.rows if r[0] in wanted)
        if self._spill is None or not self.spilled or held == len(wanted):
            # Every replaced row is held (seqs are unique on a surface): the file is not read.
            self.rows, removed, placed = _placed(self.rows, wanted, row)
            if not placed:
                self.rows.append(row)
        else:
            removed, placed = self._rewrite(wanted, row)
        self.tokens += entry.tokens - removed
        self.newest = entry.seq
        self.version += 1
        self.reshapes += 1

    def _rewrite(self, wanted: set[int], row: Row) -> tuple[int, bool]:
        """The spill file without the `wanted` rows, and `row` where the first stood: a
        chunk at a time into a new file. Returns (tokens removed, placed)."""
        old = self._file()
        fresh = tempfile.TemporaryFile(prefix="trove-surface-")  # noqa: SIM115 (kept)
        chunks: list[tuple[int, int]] = []
        removed = 0
        placed = False
        spilled = 0
        try:
            for offset, _ in self._chunks:
                rows, tokens, done = _placed(self._chunk(offset), wanted, None if placed else row)
                removed += tokens
                placed = placed or done
                if rows:
                    chunks.append((fresh.tell(), len(rows)))
                    fresh.write(encode_rows(rows))
                    spilled += len(rows)
        except BaseException:
            fresh.close()
            raise
        old.close()
        self._spill, self._chunks, self.spilled = fresh, chunks, spilled
        self.rows, tokens, done = _placed(self.rows, wanted, None if placed else row)
        removed += tokens
        placed = placed or done
        if not placed:
            self.rows.append(row)
        return removed, True

    # -- the end ---------------------------------------------------------------------------

    def finish(self, events: int) -> tuple[bytes, IO[bytes]]:
        """The fold of the log's first `events` events, as the resume index keeps a surface:
        its head, and a file holding its rows (the spill, the held rows written after)."""
        fh = self._file()
        fh.seek(0, os.SEEK_END)
        fh.write(encode_rows(self.rows))
        fh.flush()
        count = self.spilled + len(self.rows)
        self._spill = None
        head = Head(
            FORMAT,
            events,
            count,
            self.version,
            self.reshapes,
            self.tokens,
            self.newest,
            self.turn,
            self.replacements,
        )
        return _ENCODER.encode(head), fh

    def close(self) -> None:
        """Drop the spill file (a fold given up: a rewind found, a read that failed)."""
        fh, self._spill = self._spill, None
        if fh is not None:
            fh.close()


def _placed(rows: list[Row], wanted: set[int], row: Row | None) -> tuple[list[Row], int, bool]:
    """`rows` without the `wanted` ones, with `row` (if given) where the first of them stood:
    (the rows, the tokens removed, whether `row` was placed)."""
    if not wanted:
        return rows, 0, False
    out: list[Row] = []
    removed = 0
    placed = False
    for current in rows:
        if current[0] in wanted:
            removed += current[2]
            if row is not None and not placed:
                out.append(row)
                placed = True
        else:
            out.append(current)
    return out, removed, placed
