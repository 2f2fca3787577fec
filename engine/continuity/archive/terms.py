"""Which words a whole archive cannot hold, known without opening it: `history.terms`.

`trove history search --all` looks at every thread of the user, and opening an
archive (SQLite parses the schema of its per-batch FTS5 tables) is too slow to do
for every thread. This file beside the archive answers "certainly not here" with
one small read, so `--all` opens only the archives that may hold a match.

It holds a bit filter over every token of the archive's batches (as in
term_filter.py), a copy of each present batch's own filter (the words of one
source meet in one batch), and the claims that make it safe to trust:
`present`, the (batch id, batch key) pairs whose tokens are all in the bits, and
`floor`, below which every batch id is gone for good (ids are never reused). A
reader trusts it for a thread only when every archive reference on the thread's
line is below the floor or present; any other sends that thread down the ordinary
path. Batches never change, so a claim once made stays true: an old file is only
less useful, never wrong. It is bound to the archive file (device, inode) and the
thread's scope, and removed before a new archive file is created.

A capture computes the new file inside its transaction (the old bits ORed with the
new batch's tokens, or rebuilt from every batch's vocabulary when the old file
does not cover them or has filled up) and writes it atomically after the commit;
a failed write leaves the old file, and deleting it is always safe. Each of its two
parts carries a CRC: a damaged first part is no file, a damaged second part only
loses the per-batch answer.
"""

from __future__ import annotations

import contextlib
import operator
import os
import sqlite3
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import repeat
from pathlib import Path

from engine.continuity.archive import term_filter
from engine.continuity.archive.query import fts_table
from engine.util.private import open_derived, write_derived

FILE_NAME = "history.terms"
BITS = 2**19
"""Filter size, about: few false "maybe"s for a full archive.

Each archive's is a little smaller, by a number of bytes its scope picks
(`bits_for`): with one size for all, a word colliding with a common word
would read "maybe" in every thread holding that word, where now each thread's
collisions are its own."""
_FULL = 0.35
"""Past this share of bits set, a capture rebuilds the filter from the batches kept ..."""
_GROWN = 0.10
"""... once this share of bits has been set since the last rebuild (an archive whose own
words fill it past `_FULL` would otherwise be rebuilt at every capture, for nothing)."""
MAX_BYTES = 32 << 20
"""A larger file is not read (nor written): far more batches with full filters than the
default archive keeps."""
_MAGIC = b"TRVTERMS"
_VERSION = 3
# magic, version, device, inode, floor, base, pairs, scope bytes, batch filters' bytes
_HEAD = struct.Struct("<8sIQQqIIII")
_LENGTH = struct.Struct("<I")
_PAIR = struct.Struct("<qq")
_CRC = struct.Struct("<I")


def bits_for(scope: str) -> int:
    """This archive's filter size: `BITS` less a few bytes, as many as its scope picks."""
    return BITS - 64 * (zlib.crc32(scope.encode("utf-8")) % 512)


def terms_path(archive: Path) -> Path:
    """`task-history/history.terms`, beside the archive it describes."""
    return archive.with_name(FILE_NAME)


@dataclass(frozen=True, slots=True)
class ArchiveTerms:
    """One archive's filter and the claims it was written with (see the module)."""

    floor: int
    present: dict[int, int]
    """Batch id -> batch key, for every batch whose tokens are in `bits`."""
    bits: bytes
    base: int = 0
    """Bits set when the filter was last rebuilt from the batches (see `_GROWN`)."""
    filters: dict[int, bytes] | None = None
    """Batch id -> that batch's own term filter (term_filter.py), for every present
    batch; None when not read (`load(..., filters=True)` reads them)."""

    def covers(self, refs: Iterable[tuple[int, int]]) -> bool:
        """Whether the filter speaks for every referenced (batch id, batch key)."""
        return all(batch < self.floor or self.present.get(batch) == key for batch, key in refs)

    def may_hold(self, hashes: Sequence[int | None]) -> tuple[bool, bool]:
        """(may hold every term, may hold some term), for `term_filter.term_hash` values."""
        held = sum(
            1
            for hashed in hashes
            if hashed is None
            or (
                term_filter.may_hold(self.bits, hashed)
                and term_filter.may_hold(self.bits, _second(hashed))
            )
        )
        return held == len(hashes) and held > 0, held > 0

    def one_batch_may_hold(self, hashes: Sequence[int | None]) -> bool:
        """Whether some present batch may hold every term (False only when none can).

        A source holding every term sits in one batch, so a thread whose words
        are all in its archive, but never all in one batch, is ruled out here
        without opening it. Needs the batch filters (`load(..., filters=True)`).
        """
        if self.filters is None:
            return True
        return any(
            all(term_filter.may_hold(bits, hashed) for hashed in hashes)
            for bits in self.filters.values()
        )


def load(archive: Path, scope: str, *, filters: bool = False) -> ArchiveTerms | None:
    """The file for this archive and scope; None when absent, unreadable, damaged or not its own.

    The filter and claims come first in the file, each batch's own filter
    after them: `filters=True` reads those too (a few KiB a batch), which
    only a query of several words needs, for the few threads that may hold
    them all. Never raises: the file is read through `open_derived` (a link,
    a FIFO, a file past `MAX_BYTES` are no file), and every length it gives is
    held against the bytes the file has before anything is read for it.
    """
    size = bits_for(scope) // 8
    try:
        stat = os.stat(archive)
        with open_derived(terms_path(archive), MAX_BYTES) as fh:
            total = os.fstat(fh.fileno()).st_size
            data = fh.read(min(total, _HEAD.size + size + _CRC.size + 4096))
            if len(data) < _HEAD.size:
                return None
            head = _HEAD.unpack_from(data)
            first = _HEAD.size + head[7] + head[6] * _PAIR.size + size + _CRC.size
            if first > total:
                return None
            if len(data) < first:
                data += fh.read(first - len(data))
            found = decode(data[:first], scope, (stat.st_dev, stat.st_ino))
            if found is None or not filters:
                return found
            if first + head[8] + _CRC.size != total:
                return None
            rest = data[first:]  # the first read may have taken some of them
            rest += fh.read(total - first - len(rest))
            return _with_filters(found, rest, head[8])
    except OSError:
        return None


def decode(data: bytes, scope: str, identity: tuple[int, int]) -> ArchiveTerms | None:
    """Parse and check the file's first part (any damage reads as no file)."""
    size = bits_for(scope) // 8
    fixed = _HEAD.size + _CRC.size + size
    if len(data) < fixed or zlib.crc32(data[: -_CRC.size]) != _CRC.unpack(data[-_CRC.size :])[0]:
        return None
    magic, version, device, inode, floor, base, pairs, scope_len, _ = _HEAD.unpack_from(data)
    if magic != _MAGIC or version != _VERSION or (device, inode) != identity:
        return None
    if len(data) != fixed + scope_len + pairs * _PAIR.size:
        return None
    at = _HEAD.size
    if data[at : at + scope_len] != scope.encode("utf-8"):
        return None
    at += scope_len
    present = dict(_PAIR.iter_unpack(data[at : at + pairs * _PAIR.size]))
    at += pairs * _PAIR.size
    return ArchiveTerms(floor, present, data[at : at + size], base)


def _with_filters(terms: ArchiveTerms, data: bytes, length: int) -> ArchiveTerms | None:
    """The batch filters that follow the first part: a length and the bits, per present batch."""
    body = data[:length]
    if len(data) != length + _CRC.size or zlib.crc32(body) != _CRC.unpack(data[length:])[0]:
        return None
    filters: dict[int, bytes] = {}
    at = 0
    for batch in sorted(terms.present):
        if at + _LENGTH.size > length:
            return None
        (size,) = _LENGTH.unpack_from(body, at)
        at += _LENGTH.size
        filters[batch] = body[at : at + size]
        at += size
    if at != length:
        return None
    return replace(terms, filters=filters)


def encode(identity: tuple[int, int], scope: str, terms: ArchiveTerms) -> bytes:
    scoped = scope.encode("utf-8")
    known = terms.filters or {}
    tail = b"".join(
        _LENGTH.pack(len(bits)) + bits
        for bits in (known.get(batch, b"") for batch in sorted(terms.present))
    )
    body = b"".join(
        [
            _HEAD.pack(
                _MAGIC,
                _VERSION,
                *identity,
                terms.floor,
                terms.base,
                len(terms.present),
                len(scoped),
                len(tail),
            ),
            scoped,
            *(_PAIR.pack(batch, key) for batch, key in sorted(terms.present.items())),
            terms.bits,
        ]
    )
    return body + _CRC.pack(zlib.crc32(body)) + tail + _CRC.pack(zlib.crc32(tail))


def _union(a: bytes, b: bytes) -> bytes:
    union = int.from_bytes(a, "little") | int.from_bytes(b, "little")
    return union.to_bytes(len(a), "little")


_MIX = 0x9E3779B1


def _second(hashed: int) -> int:
    """A token's second position in the filter, scrambled from its CRC (see `_build`)."""
    return (hashed * _MIX) >> 7


def _build(hashed: list[int], size: int) -> bytes:
    """The filter over these token hashes, two bits a token: the CRC and a scramble of it.

    One bit a token left a full archive's filter 4 % false "maybe", so about
    four archives of a hundred were opened for a word in none; two bits, at
    the same size, leave 0.5 %. The second position is computed by C-level
    `map`s (no bytecode per token: the capture holds the GIL for this).
    """
    second = list(map(operator.rshift, map(operator.mul, hashed, repeat(_MIX)), repeat(7)))
    return term_filter.build_hashed(hashed + second, size)


def _set(bits: bytes) -> int:
    return int.from_bytes(bits, "little").bit_count()


def after_capture(
    conn: sqlite3.Connection, archive: Path, scope: str, batch_id: int, hashed: list[int]
) -> bytes:
    """Inside the capture's transaction, after its batch is written: the file's new bytes.

    `hashed` are the new batch's token hashes (batch_writes.write_batch). The old file is
    extended when it covers every other batch still stored, else the filter
    is rebuilt from every batch's vocabulary (a batch whose table cannot be
    read is left out of `present`: references to it take the ordinary path).
    """
    stored = {int(i): int(k) for i, k in conn.execute("SELECT id, batch_key FROM batches")}
    stat = os.stat(archive)
    identity = (stat.st_dev, stat.st_ino)
    floor = min(stored)
    others = {i: k for i, k in stored.items() if i != batch_id}
    size = bits_for(scope)
    fresh = _build(hashed, size)
    old = load(archive, scope)
    if old is not None and all(old.present.get(i) == k for i, k in others.items()):
        bits = _union(old.bits, fresh)
        count = _set(bits)
        if count <= _FULL * size or count - old.base <= _GROWN * size:
            made = ArchiveTerms(floor, stored, bits, old.base, _batch_filters(conn, stored))
            return encode(identity, scope, made)
    present = {batch_id: stored[batch_id]}
    every: list[bytes] = []
    for other, key in others.items():
        try:
            every.extend(term_filter.read_terms(conn, fts_table(other)))
        except sqlite3.Error:
            continue  # a damaged batch: its references open the archive
        present[other] = key
    bits = _build(hashed + term_filter.hash_terms(every), size)
    made = ArchiveTerms(floor, present, bits, _set(bits), _batch_filters(conn, present))
    return encode(identity, scope, made)


def _batch_filters(conn: sqlite3.Connection, present: dict[int, int]) -> dict[int, bytes]:
    """The present batches' own filters, as the capture's transaction sees them (a batch
    made before filters existed has none: it reads "maybe")."""
    rows = conn.execute(
        "SELECT batch_id, bits FROM term_filters WHERE batch_id >= ?", (min(present),)
    )
    return {b: bits for b, bits in rows if b in present and type(bits) is bytes}


def write(archive: Path, content: bytes) -> None:
    """Replace the file atomically; a failure leaves the old one (still true, only older),
    as does content past `MAX_BYTES` (it would not be read)."""
    if len(content) <= MAX_BYTES:
        write_derived(terms_path(archive), [content])


def remove(archive: Path) -> None:
    """Before a new archive file is made: a file about an earlier one must not be read for it."""
    with contextlib.suppress(OSError):  # cannot happen where the archive can be made
        terms_path(archive).unlink()
