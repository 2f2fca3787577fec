"""The surface kept in the log's resume index, so a long thread opens without building it.

The resume index (engine.log.resume) carries an attachment for this layer: its head
holds the surface's figures (tokens, version, newest seq, the open turn, the
pending replacements), read at every open; its body holds one row per entry (seq,
role, price, turn, tool-call ids), read only when the entries are first used. The
events themselves stay in the log: they are read by seq then (engine.log.event_list).

Until then the surface takes plain appends (a message, a turn marker, a summary)
without its entries, as `Surface.apply` would; a checkpoint or a withdrawal reads
them first. Anything that does not fit (a body that fails its digest, a row whose
event is not in the log as described) reads the whole line again instead: the kept
surface can make an open faster, never different.
"""

from __future__ import annotations

import struct
import threading
from typing import Any, cast

import msgspec
from msgspec import Struct

from engine.events import (
    AssistantMessage,
    CompactSummary,
    EndSeed,
    LogEvent,
    SessionRewind,
    ToolResult,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.log import LogCorruptError, SessionLog
from engine.log.resume import Attachment
from engine.surface import Surface
from engine.surface.entry import ENTRY_BUILDERS, Entry

FORMAT = 1
_ROLES = ("user", "assistant", "tool")
_ROLE_CODES = {role: code for code, role in enumerate(_ROLES)}
_EVENT_OF_ROLE: tuple[type, ...] = (UserMessage, AssistantMessage, ToolResult)
_LENGTH = struct.Struct("<Q")

Row = tuple[int, int, int, bool, int | None, tuple[str, ...], str | None]
"""seq, role, tokens, checkpoint, turn, call ids, result of."""


class Head(Struct, array_like=True):
    format: int
    events: int
    """The log's events the surface stands for (its first `events`)."""
    count: int
    version: int
    reshapes: int
    tokens: int
    newest: int
    turn: int | None
    replacements: dict[int, list[int]]


_HEAD_DECODER = msgspec.msgpack.Decoder(Head)
_ROWS_DECODER = msgspec.msgpack.Decoder(list[Row])
_ENCODER = msgspec.msgpack.Encoder()


def for_log(log: SessionLog) -> Surface:
    """The surface of the log's line: from the resume index the log opened from, when it
    stands for it (its entries read when first used), else replayed from the events."""
    head = _head(log)
    after = log.file_events[head.events :] if head is not None else []
    if head is None or log.kept is None or any(type(e) is SessionRewind for e in after):
        # A rewind since the index was kept (a /retry undone as the thread opened): the
        # kept rows stand for another line.
        return Surface.from_events(log.events)
    surface = Surface()
    surface.version, surface.reshapes = head.version, head.reshapes
    surface.tokens, surface.newest = head.tokens, head.newest
    surface._turn = head.turn
    surface._replacements = dict(head.replacements)
    surface._pending = _Kept(log, log.kept, head)
    for event in after:  # what came after (held: the open read it)
        surface.apply(event)
    return surface


def _head(log: SessionLog) -> Head | None:
    if log.kept is None:
        return None
    try:
        head = _HEAD_DECODER.decode(log.kept.head)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if head.format != FORMAT or head.events != log.kept_events:
        return None
    return head


def row_of(e: Entry) -> Row:
    """The row the index keeps of an entry."""
    return (e.seq, _ROLE_CODES[e.role], e.tokens, e.checkpoint, e.turn, e.call_ids, e.result_of)


def encode_rows(rows: list[Row]) -> bytes:
    """One chunk of the attachment's large part: its length, then the rows as msgpack."""
    body = _ENCODER.encode(rows)
    return _LENGTH.pack(len(body)) + body


def decode_rows(data: bytes | memoryview) -> list[Row]:
    """The rows of one chunk's msgpack (after its length)."""
    return _ROWS_DECODER.decode(data)


def _rows(entries: list[Entry]) -> bytes:
    return encode_rows([row_of(e) for e in entries])


def kept_parts(surface: Surface, events: int) -> tuple[bytes, list[bytes]]:
    """What the resume index keeps of `surface`, the surface of a log's first `events`
    events: (head, body chunks), for `SessionLog.keep_index`. A surface whose entries
    were never read passes its kept rows on as they are, with the rows appended since."""
    pending = surface._pending
    chunks: list[bytes] = []
    if isinstance(pending, _Kept):
        raw = pending.raw()
        if raw is not None:
            count = pending.head.count + len(pending.queued)
            chunks = [raw, _rows(pending.queued)] if pending.queued else [raw]
    if not chunks:
        entries = surface.entries
        count = len(entries)
        chunks = [_rows(entries)]
    head = Head(
        FORMAT,
        events,
        count,
        surface.version,
        surface.reshapes,
        surface.tokens,
        surface.newest,
        surface._turn,
        surface._replacements,
    )
    return _ENCODER.encode(head), chunks


class _Kept:
    """The pending entries of a surface opened from a resume index."""

    def __init__(self, log: SessionLog, attachment: Attachment, head: Head) -> None:
        self.log = log
        self.attachment = attachment
        self.head = head
        self.queued: list[Entry] = []
        """Entries appended since the open, before the kept ones were read."""
        self.dropped: list[int] = []
        """The seqs of the newest kept entries a rewind took back (`cut`) before they were
        read: dropped as they are read."""
        self.seen = head.events
        """The log's events the surface has taken so far (the kept ones, then each one
        `defer` took): what a replay in their place must stop at."""
        self._lock = threading.Lock()
        self._reading = threading.Lock()

    def defer(self, surface: Surface, event: LogEvent) -> bool:
        kind = type(event)
        with self._lock:
            if surface._pending is not self:
                return False
            build = ENTRY_BUILDERS.get(kind)
            if build is not None:
                if kind is UserMessage and event.checkpoint is not None:  # type: ignore[union-attr]
                    return False
                entry = build(event, surface._turn)
                if entry is not None:
                    self.queued.append(entry)
                    surface.tokens += entry.tokens
                    surface.newest = entry.seq
                    surface.version += 1
            elif kind is TurnStart:
                surface._turn = event.turn  # type: ignore[union-attr]
            elif kind is TurnEnd:
                if event.withdrawn:  # type: ignore[union-attr]
                    return False
                surface._turn = None
            elif kind is EndSeed:
                surface._turn = None
            elif kind is CompactSummary:
                surface._replacements[event.seq] = list(event.replaced or ())  # type: ignore[union-attr]
            self.seen += 1
            return True

    def cut(self, surface: Surface, seqs: list[int], added: int) -> bool:
        with self._lock:
            if surface._pending is not self:
                return False
            queued = self.queued
            count = min(len(seqs), len(queued))
            if [entry.seq for entry in queued[len(queued) - count :]] != seqs[len(seqs) - count :]:
                return False
            del queued[len(queued) - count :]
            self.dropped[:0] = seqs[: len(seqs) - count]
            # What stands for the new line now is its events but the `added` ones and the
            # rewind, which come next: a replay in its place stops there (`_replay`).
            self.seen = len(self.log.file_events) - 1 - added
            return True

    def raw(self) -> bytes | None:
        """The kept rows as the index holds them (None: unreadable, already read, or some
        of them taken back by a rewind)."""
        with self._reading:
            if self.dropped:
                return None
            return self.attachment.take()

    def read(self, surface: Surface) -> None:
        with self._reading:
            if surface._pending is not self:
                return
            entries = self._entries()
            with self._lock:
                dropped = self.dropped
                if entries is not None and dropped:
                    newest = [entry.seq for entry in entries[len(entries) - len(dropped) :]]
                    if newest == dropped:
                        del entries[len(entries) - len(dropped) :]
                    else:
                        entries = None  # not the rows the rewind took back: replay
                if entries is not None:
                    entries.extend(self.queued)
                    surface._entries = entries
                    surface._pending = None
                    return
                surface._pending = None
            _replay(surface, self.log, self.seen)

    def _entries(self) -> list[Entry] | None:
        data = self.attachment.take()
        if data is None:
            return None
        rows: list[Row] = []
        try:
            at = 0
            while at < len(data):
                (size,) = _LENGTH.unpack_from(data, at)
                rows.extend(_ROWS_DECODER.decode(memoryview(data)[at + 8 : at + 8 + size]))
                at += 8 + size
        except (struct.error, msgspec.DecodeError, msgspec.ValidationError):
            return None
        if len(rows) != self.head.count:
            return None
        try:
            return _built(self.log, rows)
        except (LogCorruptError, IndexError, KeyError):
            return None


def _built(log: SessionLog, rows: list[Row]) -> list[Entry] | None:
    """The entries of `rows`, with their events read from the log (None: a row does not
    name an event of its role)."""
    wanted = sorted({row[0] - 1 for row in rows})
    if wanted and (wanted[0] < 0 or wanted[-1] >= log.kept_events):
        return None
    found = dict(zip(wanted, log.file_events.gather(wanted), strict=True))
    entries: list[Entry] = []
    for seq, role, tokens, checkpoint, turn, call_ids, result_of in rows:
        event = found[seq - 1]
        if role >= len(_ROLES) or type(event) is not _EVENT_OF_ROLE[role] or event.seq != seq:
            return None
        message = cast(Any, event)
        row = (tokens, checkpoint, turn, call_ids, result_of)
        entries.append(Entry(seq, _ROLES[role], message, *row))
    return entries


def _replay(surface: Surface, log: SessionLog, seen: int) -> None:
    """The kept entries could not be used: the surface of the line but its newest
    `len(file) - seen` events, in place, its counters still only growing (what was
    vouched for before cannot pass after). Those are the newest of the file and of the
    line alike, or, after a rewind taken in without reading (`cut`), the events of the
    new line not yet taken and the rewind."""
    events = log.events
    unseen = len(log.file_events) - seen
    fresh = Surface.from_events(events[: len(events) - unseen] if unseen else events)
    version, reshapes = surface.version, surface.reshapes
    vars(surface).update(vars(fresh))
    surface.version = max(version, fresh.version) + 1
    surface.reshapes = reshapes + 1
