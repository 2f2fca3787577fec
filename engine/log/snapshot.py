"""A replay snapshot: a long log's events, decoded once, kept beside it as msgpack.

Decoding JSON lines is most of a long thread's resume, and msgpack of the same events
decodes faster (bench/log_replay.py). The log stays the only source of truth:

- A snapshot is used only while it stands for the log's first bytes: its header names
  how many it covers and seals them and its body in a BLAKE2b digest. A log that no
  longer begins with them, or a changed body, is a miss, and replay reads every line.
  The digests run on threads of their own while the body decodes.
- No length in it is trusted beyond the bytes there are: it is read only as a regular
  file at most a few times the log's size (`open_derived`), and what it says it
  covers and counts must be there.

The seal is no defence against someone who can write the thread's files: they could
edit the log itself. The log's writer writes it as it closes
(`SessionLog.keep_snapshot`), only for a long log; lines after it decode as usual.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, cast

import msgspec
from msgspec import Struct

from engine.events import KnownEvent, LogEvent, UnknownEvent
from engine.log.derived import discard_covering
from engine.log.line_codec import in_order
from engine.log.log_file import open_log
from engine.util.private import open_derived, write_derived

SUFFIX = ".replay"
"""The snapshot of `session.jsonl` is `session.jsonl.replay`."""
MAGIC = b"trove replay 2\n"
_HEADER = struct.Struct("<QQ32s")
"""Bytes of the log covered, events in the body, the seal of those bytes and the body."""
MIN_EVENTS = 10_000
"""A shorter log replays from its lines about as fast: not worth a second copy on disk."""
STALE_EVENTS = 5_000
"""A snapshot is rewritten once the log has grown this many events past it."""
GROWTH = 4
"""A body larger than this many times the log bytes it covers (and `_SLACK`) is neither
written nor read: msgpack of the events takes about as many bytes as their lines."""
_SLACK = 1 << 16
_PERSON_LOG = b"trove log"
_PERSON_BODY = b"trove replay"
_PERSON_SEAL = b"trove seal"

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(list[KnownEvent])


class Snapshot(Struct, frozen=True, gc=False):
    """The events of the log's first `covered` bytes (checked against them)."""

    events: list[LogEvent]
    covered: int


def path_for(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + SUFFIX)


def max_body(covered: int) -> int:
    """The largest body a snapshot of `covered` log bytes may have (see `GROWTH`)."""
    return GROWTH * covered + _SLACK


def load(log_path: Path, log: IO[bytes]) -> Snapshot | None:
    """The snapshot beside the log, when it stands for the first bytes of `log` (the log's
    file, open for reading); None otherwise. Never raises.

    Both files are mapped, not read: a copy of tens of MB on the heap would leave
    its pages behind in a process whose other threads allocate meanwhile.
    """
    try:
        log_size = os.fstat(log.fileno()).st_size
        bound = len(MAGIC) + _HEADER.size + max_body(log_size)
        with open_derived(path_for(log_path), bound) as fh, _mapped(fh) as data:
            return _verified(data, log, log_size)
    except (OSError, ValueError):
        return None


def _verified(data: mmap.mmap, log: IO[bytes], log_size: int) -> Snapshot | None:
    """The events of the mapped snapshot `data` when its seal holds over `log`'s bytes."""
    start = len(MAGIC) + _HEADER.size
    if len(data) < start or data[: len(MAGIC)] != MAGIC:
        return None
    covered, count, seal = _HEADER.unpack_from(data, len(MAGIC))
    body_size = len(data) - start
    if not 0 < covered <= log_size or body_size > max_body(covered) or count > body_size:
        return None
    # The log is never cut below what a snapshot covers (a torn tail is cut, and it lies
    # after those bytes), so its mapped prefix cannot fault.
    with _mapped(log, covered) as prefix, memoryview(prefix) as logged, memoryview(data) as view:
        body = view[start:]
        try:
            log_digest = _Digest(logged, _PERSON_LOG)
            body_digest = _Digest(body, _PERSON_BODY)
            try:
                events = _decode(body)
            finally:
                digests = log_digest.result(), body_digest.result()
        finally:
            body.release()
    if _seal(covered, count, *digests) != seal:
        return None
    if events is None or len(events) != count or not in_order(events):
        return None
    return Snapshot(events, covered)


def _decode(body: memoryview) -> list[LogEvent] | None:
    try:
        return cast(list[LogEvent], _DECODER.decode(body))
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def _digest(data: bytes | memoryview | mmap.mmap, person: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=32, person=person).digest()


def _seal(covered: int, count: int, log_digest: bytes, body_digest: bytes) -> bytes:
    """What binds the body to the log bytes it stands for (the header's last field)."""
    header = struct.pack("<QQ", covered, count)
    return _digest(header + log_digest + body_digest, _PERSON_SEAL)


class _Digest:
    """A digest made on a thread of its own (hashlib lets go of the interpreter lock while
    it hashes a large buffer), so the two digests and the decode run side by side."""

    def __init__(self, data: memoryview, person: bytes) -> None:
        self._value = b""
        self._thread = threading.Thread(
            target=self._run, args=(data, person), name="trove-replay-digest", daemon=True
        )
        try:
            self._thread.start()
        except RuntimeError:  # no thread to be had: made here instead
            self._thread = threading.Thread()
            self._run(data, person)

    def _run(self, data: memoryview, person: bytes) -> None:
        self._value = _digest(data, person)

    def result(self) -> bytes:
        """The digest, once made (empty if making it failed: no seal matches it)."""
        if self._thread.ident is not None:
            self._thread.join()
        return self._value


@contextlib.contextmanager
def _mapped(fh: IO[bytes], length: int = 0) -> Iterator[mmap.mmap]:
    """The file (its first `length` bytes; 0: all of it) mapped read-only."""
    with mmap.mmap(fh.fileno(), length, access=mmap.ACCESS_READ) as data:
        yield data


def discard_beyond(log_path: Path, size: int) -> None:
    """Remove the snapshot if it covers more of the log than its first `size` bytes (or
    its header cannot be read). The writer does, before it cuts the log to `size` (a
    quarantine): no reader then maps bytes about to go, and the log grown again past
    them never meets a snapshot of what was cut (its CRC would be the only guard)."""
    discard_covering(path_for(log_path), MAGIC, _HEADER, size)


def worth_writing(events: list[LogEvent], kept: int) -> bool:
    """A long log with no snapshot, or one `STALE_EVENTS` behind it."""
    return len(events) >= MIN_EVENTS and len(events) - kept >= STALE_EVENTS


def write(log_path: Path, events: list[LogEvent], covered: int) -> bool:
    """Write the snapshot of `events`, the log's first `covered` bytes, atomically.

    False when nothing was written: an event of a kind this code does not know
    (it could not be read back typed), or the log's file no longer holds those
    bytes, a body past `max_body`, or a failure to write, which leaves the old
    snapshot or none: it only ever saves time."""
    if covered <= 0 or UnknownEvent in set(map(type, events)):
        return False
    try:
        with open_log(log_path) as fh:
            if os.fstat(fh.fileno()).st_size < covered:
                return False
            with _mapped(fh, covered) as prefix:
                log_digest = _digest(prefix, _PERSON_LOG)
    except (OSError, ValueError):
        return False
    body = _ENCODER.encode(events)
    if len(body) > max_body(covered):
        return False
    seal = _seal(covered, len(events), log_digest, _digest(body, _PERSON_BODY))
    target = path_for(log_path)
    # One name: only the thread's writer (it holds the lock) writes a snapshot, and a copy
    # a kill left half written (tens of MB) is overwritten by the next, not left behind.
    return write_derived(
        target,
        [MAGIC + _HEADER.pack(covered, len(events), seal), body],
        temporary=target.with_name(f".{target.name}.tmp"),
    )
