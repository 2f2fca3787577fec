"""Which words a whole archive cannot hold, known without opening it: `history.terms`.

`trove history search --all` looks at every thread of the user. Opening an
archive costs about a millisecond before any query runs (SQLite parses the
schema of its up to 32 per-batch FTS5 tables), so a hundred archives would
spend the whole budget before one word is looked up. This file, beside the
archive, answers "certainly not in this archive" with one small read, so
`--all` opens only the archives that may hold a match.

It holds a bit filter over every token of the archive's batches (one CRC-32
hash a token, as the per-batch filters of term_filter.py; 2**19 bits, a few
percent of false "maybe" for a full archive) and the claims that make it
safe to trust:

- `present`: the batches, as (batch id, batch key), whose tokens are all
  in the bits;
- `floor`: every batch id below it is gone for good (a committed id is never
  reused: schema.py), so a reference to one reaches nothing.

A reader trusts the file for a thread only when every archive reference on
the thread's line is below the floor or names a present (id, key); any other
reference (a batch an older Trove wrote, a capture whose write of this file
failed or was lost in a crash) sends that thread down the ordinary path,
which opens the archive. Batches never change, so each claim stays true once
made: an old file is only less useful, never wrong. The file is bound to the
archive file it describes (device, inode) and to the thread's scope, and
Trove removes it before creating a new archive file (whose ids start again).

The capture that commits a batch computes the new file inside its
transaction (the old bits ORed with the new batch's tokens; rebuilt from
every batch's FTS5 vocabulary when the old file does not cover the batches
already there, or has filled past a third of its bits, mostly with words of
batches evicted since) and writes it after
the commit, atomically (a private temporary file renamed into place). A
write that fails leaves the old file, whose claims still hold; deleting the
file is always safe.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.continuity import term_filter
from engine.continuity.query import fts_table
from engine.private import write_private

FILE_NAME = "history.terms"
BITS = 2**19
"""Filter size: 64 KiB; a full archive (about 20,000 distinct tokens) reads "maybe" ~4 %."""
_FULL = 0.35
"""Past this share of bits set, a capture rebuilds the filter from the batches kept ..."""
_GROWN = 0.10
"""... once this share of bits has been set since the last rebuild (an archive whose own
words fill it past `_FULL` would otherwise be rebuilt at every capture, for nothing)."""
_MAGIC = b"TRVTERMS"
_VERSION = 1
_HEAD = struct.Struct("<8sIQQqIII")  # magic, version, device, inode, floor, base, pairs, scope
_PAIR = struct.Struct("<qq")
_CRC = struct.Struct("<I")


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

    def covers(self, refs: Iterable[tuple[int, int]]) -> bool:
        """Whether the filter speaks for every referenced (batch id, batch key)."""
        return all(batch < self.floor or self.present.get(batch) == key for batch, key in refs)

    def may_hold(self, hashes: Sequence[int | None]) -> tuple[bool, bool]:
        """(may hold every term, may hold some term), for `term_filter.term_hash` values."""
        held = sum(1 for hashed in hashes if term_filter.may_hold(self.bits, hashed))
        return held == len(hashes) and held > 0, held > 0


def load(archive: Path, scope: str) -> ArchiveTerms | None:
    """The file for this archive and scope; None when absent, unreadable, damaged or not its own."""
    try:
        data = terms_path(archive).read_bytes()
        stat = os.stat(archive)
    except OSError:
        return None
    return decode(data, scope, (stat.st_dev, stat.st_ino))


def decode(data: bytes, scope: str, identity: tuple[int, int]) -> ArchiveTerms | None:
    """Parse and check the file's bytes (any damage reads as no file)."""
    fixed = _HEAD.size + _CRC.size + BITS // 8
    if len(data) < fixed or zlib.crc32(data[: -_CRC.size]) != _CRC.unpack(data[-_CRC.size :])[0]:
        return None
    magic, version, device, inode, floor, base, pairs, scope_len = _HEAD.unpack_from(data)
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
    return ArchiveTerms(floor, present, data[at : at + BITS // 8], base)


def encode(identity: tuple[int, int], scope: str, terms: ArchiveTerms) -> bytes:
    scoped = scope.encode("utf-8")
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
            ),
            scoped,
            *(_PAIR.pack(batch, key) for batch, key in sorted(terms.present.items())),
            terms.bits,
        ]
    )
    return body + _CRC.pack(zlib.crc32(body))


def _union(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "little") | int.from_bytes(b, "little")).to_bytes(BITS // 8, "little")


def _set(bits: bytes) -> int:
    return int.from_bytes(bits, "little").bit_count()


def after_capture(
    conn: sqlite3.Connection, archive: Path, scope: str, batch_id: int, tokens: list[bytes]
) -> bytes:
    """Inside the capture's transaction, after its batch is written: the file's new bytes.

    `tokens` are the new batch's (term_filter.read_terms). The old file is
    extended when it covers every other batch still stored, else the filter
    is rebuilt from every batch's vocabulary (a batch whose table cannot be
    read is left out of `present`: references to it take the ordinary path).
    """
    stored = {int(i): int(k) for i, k in conn.execute("SELECT id, batch_key FROM batches")}
    stat = os.stat(archive)
    identity = (stat.st_dev, stat.st_ino)
    floor = min(stored)
    others = {i: k for i, k in stored.items() if i != batch_id}
    fresh = term_filter.build(tokens, bits=BITS)
    old = load(archive, scope)
    if old is not None and all(old.present.get(i) == k for i, k in others.items()):
        bits = _union(old.bits, fresh)
        count = _set(bits)
        if count <= _FULL * BITS or count - old.base <= _GROWN * BITS:
            return encode(identity, scope, ArchiveTerms(floor, stored, bits, old.base))
    present = {batch_id: stored[batch_id]}
    every: list[bytes] = list(tokens)
    for other, key in others.items():
        try:
            every.extend(term_filter.read_terms(conn, fts_table(other)))
        except sqlite3.Error:
            continue  # a damaged batch: its references open the archive
        present[other] = key
    bits = term_filter.build(every, bits=BITS)
    return encode(identity, scope, ArchiveTerms(floor, present, bits, _set(bits)))


def write(archive: Path, content: bytes) -> None:
    """Replace the file atomically; a failure leaves the old one (still true, only older)."""
    path = terms_path(archive)
    temporary = path.with_name(f".{FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        write_private(temporary, content)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()


def remove(archive: Path) -> None:
    """Before a new archive file is made: a file about an earlier one must not be read for it."""
    with contextlib.suppress(OSError):  # cannot happen where the archive can be made
        terms_path(archive).unlink()
