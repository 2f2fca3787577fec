"""Which terms a batch cannot hold: one small bit filter per batch, made at capture.

A search would otherwise ask every per-batch FTS5 table about each term, and a
query that matches nothing, or a rare word, asks all of them. The filter answers
"certainly not here" from memory, so FTS5 is asked only about the batches that may
hold a match; a false "maybe" costs one ordinary probe, and FTS5 still decides
every hit.

The filter holds exactly the tokens FTS5 indexed for the batch, read back from its
own table (`read_terms`, an fts5vocab scan inside the capture's transaction):
sound by construction, and SQLite's work in C with the GIL released, where doing
it in Python held the GIL. Only ASCII words and CJK bigrams, whose query text is
the token itself, are ever ruled out (`term_hash`); any other term reads "maybe".
The hash (CRC-32) is stable, so a filter written by one process serves all.
"""

from __future__ import annotations

import re
import sqlite3
import time
import zlib
from collections import deque
from collections.abc import Sequence
from itertools import repeat

from engine.continuity.archive import fts

_BIGRAM = re.compile(r"[\u3400-\u9fff]{2}")
_MIN_BITS = 1024
_MAX_BITS = 64 * 1024 * 8
_BITS_PER_TERM = 12
_CHUNK = 4096
_SPLIT_BYTES = 32 * 1024
_VOCAB = "trove_capture_vocab"


def read_terms(conn: sqlite3.Connection, table: str) -> list[bytes]:
    """Every token of one FTS5 table (UTF-8), read in one statement.

    One `group_concat` step scans the index in C with the GIL released
    (tokens never hold a space); a row per term would take the GIL back
    37,000 times. Runs inside the caller's transaction, before its commit.
    """
    conn.execute(f"DROP TABLE IF EXISTS temp.{_VOCAB}")
    conn.execute(f"CREATE VIRTUAL TABLE temp.{_VOCAB} USING fts5vocab(main, '{table}', 'row')")
    try:
        row = conn.execute(f"SELECT group_concat(term, ' ') FROM temp.{_VOCAB}").fetchone()
    finally:
        conn.execute(f"DROP TABLE temp.{_VOCAB}")
    text = row[0] if row is not None else None
    data = text.encode("utf-8") if isinstance(text, str) else b""
    terms: list[bytes] = []
    start = 0
    while start < len(data):  # a few thousand terms per C call (the GIL is held in each)
        end = data.find(b" ", start + _SPLIT_BYTES)
        end = len(data) if end < 0 else end
        terms.extend(data[start:end].split(b" "))
        start = end + 1
        time.sleep(0)  # hand the GIL over (see `build`)
    return terms


def _size(terms: int) -> int:
    return min(_MAX_BITS, max(_MIN_BITS, (_BITS_PER_TERM * terms + 7) // 8 * 8))


def max_bytes(index: Sequence[str]) -> int:
    """An upper bound of the filter's size, known before the batch is written (retention).

    A token takes at least one character and a separator, so a text holds
    at most half its length in tokens; the filter's size is capped.
    """
    return _size(sum((len(text) + 1) // 2 for text in index)) // 8


def build(terms: Sequence[bytes], bits: int | None = None) -> bytes:
    """A one-hash bit filter over `terms`, 12 bits a term.

    `bits` fixes the size instead (a multiple of 8). Its pages count against the
    archive's ceiling, so it is kept small and capped (a larger batch only reads
    "maybe" more often, and a false "maybe" costs only one probe). Each batch's
    filter has its own size (its term count), so a term that collides with a
    common word in one batch's filter does not in the next.
    """
    return build_hashed(hash_terms(terms), _size(len(terms)) if bits is None else bits)


def hash_terms(terms: Sequence[bytes]) -> list[int]:
    """Each term's hash, once (a capture builds two filters from them: archive_terms.py)."""
    hashed: list[int] = []
    for at in range(0, len(terms), _CHUNK):
        hashed.extend(map(zlib.crc32, terms[at : at + _CHUNK]))
        time.sleep(0)  # hand the GIL over (see `build_hashed`)
    return hashed


def size_for(terms: int) -> int:
    """The size, in bits, of the filter `build` makes for this many terms."""
    return _size(terms)


def build_hashed(hashed: Sequence[int], bits: int) -> bytes:
    """The filter of `bits` bits over these term hashes (`hash_terms`).

    Bit `at` is bit `at & 7` of byte `at >> 3`. The bits are set one byte
    each by C iteration (no bytecode per term), a few thousand terms per
    call so no call holds the GIL for long, then packed eight to a byte with
    big-integer shifts: byte k of every eighth byte goes to bit k. After each
    call the GIL is handed over (`sleep(0)`): a thread waiting for it, the UI
    loop above all, would otherwise wait out the switch interval, and longer
    when both cores are busy.
    """
    flags = bytearray(bits)
    put = flags.__setitem__
    for at in range(0, len(hashed), _CHUNK):
        chunk = hashed[at : at + _CHUNK]
        deque(map(put, map(bits.__rmod__, chunk), repeat(1)), maxlen=0)
        time.sleep(0)
    packed = 0
    for bit in range(8):
        packed |= int.from_bytes(flags[bit::8], "little") << bit
    return packed.to_bytes(bits // 8, "little")


def term_hash(term: fts.Term) -> int | None:
    """The term's hash when a filter can rule it out; None when it can only say maybe."""
    if term.prefix:
        return None
    text = term.text
    if text.isascii():
        return zlib.crc32(text.encode("ascii")) if text.isalnum() else None
    if len(text) == 2 and _BIGRAM.fullmatch(text):
        return zlib.crc32(text.encode("utf-8"))
    return None


def possible(bits: dict[int, bytes], hashes: list[int | None]) -> tuple[set[int], set[int]]:
    """(batches that may hold every term, batches that may hold some term)."""
    every: set[int] = set()
    some: set[int] = set()
    for batch_id, filt in bits.items():
        size = len(filt) * 8
        held = 0
        for hashed in hashes:
            if hashed is None or size < _MIN_BITS:
                held += 1
            else:
                at = hashed % size
                held += filt[at >> 3] >> (at & 7) & 1
        if held:
            some.add(batch_id)
            if held == len(hashes):
                every.add(batch_id)
    return every, some


def may_hold(bits: bytes, hashed: int | None) -> bool:
    """False only when the batch certainly lacks the term."""
    if hashed is None or len(bits) * 8 < _MIN_BITS:
        return True
    at = hashed % (len(bits) * 8)
    return bool(bits[at >> 3] >> (at & 7) & 1)
