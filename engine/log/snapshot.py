"""A replay snapshot: a long log's events, decoded once, kept beside it as msgpack.

Decoding JSON lines into typed events is most of a long thread's resume
(~200 ms of the interpreter's time at 200,000 events); msgpack of the same
events decodes in about two thirds of that. The log stays the only source of
truth: a snapshot names the exact bytes of the log it was made from (how
many, and their CRC-32) and carries the CRC-32 of its own body, so a log that
no longer begins with those bytes (repaired by hand, replaced, cut short) or a
snapshot damaged on disk is a miss, and replay reads every line as before.
Both checksums run without the interpreter lock, beside the app's start-up.

Written by the log's writer as it closes (`SessionLog.keep_snapshot`), only
for a long log whose snapshot would cover much more than the one it has; the
lines appended after a snapshot are decoded from the log as usual.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, cast

import msgspec
from msgspec import Struct

from engine.events import KnownEvent, LogEvent, UnknownEvent
from engine.log.line_codec import in_order
from engine.private import open_private

SUFFIX = ".replay"
"""The snapshot of `session.jsonl` is `session.jsonl.replay`."""
MAGIC = b"trove replay 1\n"
_HEADER = struct.Struct("<QIQI")
"""Bytes of the log covered, their CRC-32, events in the body, the body's CRC-32."""
MIN_EVENTS = 10_000
"""A shorter log replays from its lines in under ~20 ms, where a snapshot saves a few:
not worth a second copy of it on disk. (At 10,000 events with tool calls it saved
7-13 ms of a 19-33 ms read, at 200,000 events ~100 ms.)"""
STALE_EVENTS = 5_000
"""A snapshot is rewritten once the log has grown this many events past it."""

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(list[KnownEvent])


class Snapshot(Struct, frozen=True, gc=False):
    """The events of the log's first `covered` bytes."""

    events: list[LogEvent]
    covered: int
    crc: int
    """The CRC-32 of those bytes of the log: checked against the log before use."""


def path_for(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + SUFFIX)


def load(log_path: Path) -> Snapshot | None:
    """The snapshot beside the log, if its body is whole (None otherwise; never raises).

    Whether the log still begins with the bytes it covers is the reader's to check
    (`crc_of_prefix`), as it reads the log. The file is mapped, not read: a copy of
    tens of MB on the heap would leave its pages behind in a process whose other
    threads allocate meanwhile."""
    try:
        with path_for(log_path).open("rb") as fh, _mapped(fh) as data:
            return _decode(data)
    except (OSError, ValueError):
        return None


def _decode(data: mmap.mmap) -> Snapshot | None:
    start = len(MAGIC) + _HEADER.size
    if len(data) < start or data[: len(MAGIC)] != MAGIC:
        return None
    covered, crc, count, body_crc = _HEADER.unpack_from(data, len(MAGIC))
    with memoryview(data) as view:
        body = view[start:]
        try:
            if zlib.crc32(body) != body_crc:
                return None
            try:
                events = cast(list[LogEvent], _DECODER.decode(body))
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                return None
        finally:
            body.release()
    if len(events) != count or not in_order(events):
        return None
    return Snapshot(events, covered, crc)


@contextlib.contextmanager
def _mapped(fh: IO[bytes], length: int = 0) -> Iterator[mmap.mmap]:
    """The file (its first `length` bytes; 0: all of it) mapped read-only."""
    with mmap.mmap(fh.fileno(), length, access=mmap.ACCESS_READ) as data:
        yield data


def crc_of_prefix(fh: IO[bytes], size: int) -> int | None:
    """The CRC-32 of the file's first `size` bytes (None: the file is shorter), mapped
    rather than read (see `load`). Leaves `fh` just after them.

    A mapped file cut short under the mapping would fault; Trove never cuts a log
    below what a snapshot covers (a torn tail is cut, and it lies after those bytes;
    a quarantine that cuts below removes the snapshot first: `discard_beyond`)."""
    if os.fstat(fh.fileno()).st_size < size:
        return None
    if size == 0:
        return 0
    with _mapped(fh, size) as data:
        crc = zlib.crc32(data)
    fh.seek(size)
    return crc


def discard_beyond(log_path: Path, size: int) -> None:
    """Remove the snapshot if it covers more of the log than its first `size` bytes (or
    its header cannot be read). The writer does, before it cuts the log to `size` (a
    quarantine): no reader then maps bytes about to go, and the log grown again past
    them never meets a snapshot of what was cut (its CRC would be the only guard)."""
    target = path_for(log_path)
    try:
        with target.open("rb") as fh:
            head = fh.read(len(MAGIC) + _HEADER.size)
    except FileNotFoundError:
        return
    except OSError:
        head = b""
    whole = len(head) == len(MAGIC) + _HEADER.size and head.startswith(MAGIC)
    if whole and _HEADER.unpack_from(head, len(MAGIC))[0] <= size:
        return
    with contextlib.suppress(OSError):
        target.unlink()


def worth_writing(events: list[LogEvent], kept: int) -> bool:
    """A long log with no snapshot, or one `STALE_EVENTS` behind it."""
    return len(events) >= MIN_EVENTS and len(events) - kept >= STALE_EVENTS


def write(log_path: Path, events: list[LogEvent], covered: int) -> bool:
    """Write the snapshot of `events`, the log's first `covered` bytes, atomically.

    False when nothing was written: an event of a kind this code does not know
    (it could not be read back typed), or the log's file no longer holds those
    bytes, or a failure to write, which leaves the old snapshot or none: it only
    ever saves time."""
    if UnknownEvent in set(map(type, events)):
        return False
    try:
        with log_path.open("rb") as fh:
            crc = crc_of_prefix(fh, covered)
    except OSError:
        return False
    if crc is None:
        return False
    body = _ENCODER.encode(events)
    header = MAGIC + _HEADER.pack(covered, crc, len(events), zlib.crc32(body))
    target = path_for(log_path)
    # One name: only the thread's writer (it holds the lock) writes a snapshot, and a copy
    # a kill left half written (tens of MB) is overwritten by the next, not left behind.
    temporary = target.with_name(f".{target.name}.tmp")
    try:
        with os.fdopen(open_private(temporary, os.O_WRONLY | os.O_TRUNC), "wb") as out:
            out.write(header)
            out.write(body)
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
        return False
    return True
