"""The resume index: what a thread's log amounts to at its end, kept beside it, so a long
thread opens from its end instead of replaying every line.

`session.jsonl.resume` holds, for the log's first `covered` bytes: the log's index
(where every stride of lines starts, digests of its blocks: engine.log.index), the
file's facts and the line's state (engine.log.state), and an attachment the log
keeps for the layer above it (the surface: engine.surface.kept), read only when
that layer asks for it. The log stays the only source of truth:

- The header and body are sealed together (BLAKE2b); the attachment's digest is in
  the body and is checked when the attachment is read. Anything else is a miss.
- The index is used only while the log's first block and its last bytes before
  `covered` are the ones it was made of (their digests are checked: a log cut,
  rewritten or copied in is a miss), and the log's next line (if it grew since)
  must carry the next seq.
- Read as a derived file (`open_derived`): never a link, a FIFO, a device, or more
  bytes than a few times the log's.

A miss costs a full replay (engine.log.replay), never a different thread. The writer
writes it as it closes cleanly (`SessionLog.keep_index`), and removes it before it
cuts the log below what it covers (`discard_beyond`).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import struct
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

import msgspec
from msgspec import Struct

from engine.log.derived import discard_covering
from engine.log.index import LogIndex
from engine.log.state import FileFacts, LineState
from engine.util.private import open_derived, write_derived

SUFFIX = ".resume"
"""The resume index of `session.jsonl` is `session.jsonl.resume`."""
MAGIC = b"trove resume 1\n"
_HEADER = struct.Struct("<QQQ32s")
"""Bytes of the log covered, events, the body's length, the seal of the header and body."""
GROWTH = 4
"""The file is read only up to this many times the log's size (and `_SLACK`)."""
_SLACK = 1 << 20
_PERSON_SEAL = b"trove resume"
_PERSON_PART = b"trove resume att"


class _Body(Struct, array_like=True):
    count: int
    size: int
    offsets: bytes
    digests: bytes
    partial: bytes
    facts: FileFacts
    state: LineState
    head: bytes
    """The attachment's small part, read with the body."""
    attached: bytes
    """The digest of the attachment's large part (the rest of the file)."""


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(_Body)


def path_for(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + SUFFIX)


def _seal(header: bytes, body: bytes | memoryview) -> bytes:
    digest = hashlib.blake2b(digest_size=32, person=_PERSON_SEAL)
    digest.update(header)
    digest.update(body)
    return digest.digest()


def _part_digest(chunks: Iterable[bytes]) -> bytes:
    digest = hashlib.blake2b(digest_size=32, person=_PERSON_PART)
    for chunk in chunks:
        digest.update(chunk)
    return digest.digest()


_PIECE = 1 << 20


def file_pieces(fh: IO[bytes]) -> Iterator[bytes]:
    """The bytes of the open file `fh`, a piece at a time (positional reads: its offset is
    left alone)."""
    at = 0
    while True:
        piece = os.pread(fh.fileno(), _PIECE, at)
        if not piece:
            return
        yield piece
        at += len(piece)


def spilled(head: bytes, fh: IO[bytes]) -> Attachment:
    """An attachment held in a file of its own, all of it the large part (a cold open's
    surface, spilled while the log was read: engine.log.cold). Blocking: it is digested."""
    return Attachment(head, fh, 0, _part_digest(file_pieces(fh)))


class Attachment:
    """What the layer above the log kept in the index: `head`, read with it, and a large
    part read once, when asked for (`take`), from the file as it was opened."""

    def __init__(self, head: bytes, fh: IO[bytes] | None, start: int, digest: bytes) -> None:
        self.head = head
        self._fh = fh
        self._start = start
        self._digest = digest
        self._lock = threading.Lock()

    def take(self) -> bytes | None:
        """The large part, once (None: it was taken, closed, or does not match its digest)."""
        with self._lock:
            fh, self._fh = self._fh, None
        if fh is None:
            return None
        try:
            with fh:
                size = os.fstat(fh.fileno()).st_size
                data = os.pread(fh.fileno(), size - self._start, self._start)
        except OSError:
            return None
        if len(data) != size - self._start or _part_digest([data]) != self._digest:
            return None
        return data

    @property
    def digest(self) -> bytes:
        """The digest of the large part."""
        return self._digest

    def file(self) -> IO[bytes] | None:
        """The file the large part is read from, while it is not taken (for a copy of it
        made with positional reads: `write`)."""
        with self._lock:
            return self._fh if self._start == 0 else None

    def close(self) -> None:
        with self._lock:
            fh, self._fh = self._fh, None
        if fh is not None:
            fh.close()


class Kept(Struct, frozen=True):
    """A resume index that stands for the log's first `index.size` bytes."""

    index: LogIndex
    facts: FileFacts
    state: LineState
    attachment: Attachment


def load(log_path: Path, log: IO[bytes]) -> Kept | None:
    """The resume index beside the log when it stands for the first bytes of `log` (the
    log's file, open for reading); None otherwise. Never raises."""
    try:
        log_size = os.fstat(log.fileno()).st_size
        fh = open_derived(path_for(log_path), GROWTH * log_size + _SLACK)
    except (OSError, ValueError):
        return None
    try:
        kept = _verified(fh, log, log_size)
    except (OSError, ValueError, msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        kept = None
    if kept is None:
        fh.close()
    return kept


def _verified(fh: IO[bytes], log: IO[bytes], log_size: int) -> Kept | None:
    size = os.fstat(fh.fileno()).st_size
    start = len(MAGIC) + _HEADER.size
    head = fh.read(start)
    if len(head) != start or not head.startswith(MAGIC):
        return None
    covered, count, body_size, seal = _HEADER.unpack_from(head, len(MAGIC))
    if not 0 < covered <= log_size or body_size > size - start:
        return None
    body = fh.read(body_size)
    if len(body) != body_size or _seal(head[len(MAGIC) : start - 32], body) != seal:
        return None
    kept = _DECODER.decode(body)
    if kept.count != count or kept.size != covered:
        return None
    index = LogIndex.from_parts(log, count, covered, kept.offsets, kept.digests, kept.partial)
    if index is None:
        return None
    attachment = Attachment(kept.head, fh, start + body_size, kept.attached)
    return Kept(index, kept.facts, kept.state, attachment)


def write(
    log_path: Path,
    index: LogIndex,
    facts: FileFacts,
    state: LineState,
    head: bytes = b"",
    attached: list[bytes] | Attachment | None = None,
) -> bool:
    """Write the resume index of the log's first `index.size` bytes, atomically (False:
    nothing was written, and the old one, if any, stays). The large part of what is
    attached is given as chunks, or as a spilled attachment (`spilled`), copied a piece at
    a time."""
    count, covered, offsets, digests, partial = index.parts()
    if covered <= 0:
        return False
    chunks: Iterable[bytes]
    if isinstance(attached, Attachment):
        spill = attached.file()
        if spill is None:
            return False
        chunks, digest = file_pieces(spill), attached.digest
    else:
        chunks = attached or []
        digest = _part_digest(chunks)
    try:
        body = _ENCODER.encode(
            _Body(count, covered, offsets, digests, partial, facts, state, head, digest)
        )
    except (TypeError, msgspec.EncodeError):
        return False  # e.g. a kind this code does not know, among the records
    header = MAGIC + struct.pack("<QQQ", covered, count, len(body))
    target = path_for(log_path)
    return write_derived(
        target,
        itertools.chain([header + _seal(header[len(MAGIC) :], body), body], chunks),
        temporary=target.with_name(f".{target.name}.tmp"),
    )


def discard_beyond(log_path: Path, size: int) -> None:
    """Remove the resume index if it covers more of the log than its first `size` bytes
    (or its header cannot be read): the writer does, before it cuts the log."""
    discard_covering(path_for(log_path), MAGIC, _HEADER, size)


def discard(log_path: Path) -> None:
    """Remove the resume index (the log was written out again: it stands for other bytes)."""
    with contextlib.suppress(OSError):
        path_for(log_path).unlink()
