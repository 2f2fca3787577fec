"""Which terms a batch cannot hold: one small bit filter per batch, made at capture.

A search on a full archive would otherwise ask each of up to 32 per-batch
FTS5 tables about each term (about 10 microseconds a term and table), and a
query that matches nothing, or a rare word, asks all of them. The filter
answers "certainly not here" from memory, so FTS5 is asked only about the
batches that may hold a match; a false "maybe" (a few percent) costs one
ordinary probe, and the FTS5 query still decides every hit.

The filter holds the batch's ASCII words and CJK bigrams, read from the
same index text FTS5 tokenizes: runs of ASCII letters and digits, lowercased
(unicode61 folds ASCII case, and a non-ASCII character never belongs to an
ASCII token), and the bigrams `fts.index_text` wrote. Only query terms of
those two shapes are ever ruled out (`term_hash`); any other term (a lone CJK
character searched as a prefix, a word with non-ASCII letters) reads "maybe".
The hash (CRC-32) is stable, so a filter written by one process serves all.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

from engine.continuity import fts

# Index bytes -> ASCII words: letters lowercased, digits kept, all else a space.
_WORDS = bytes(
    c + 32 if 65 <= c <= 90 else c if (48 <= c <= 57 or 97 <= c <= 122) else 32 for c in range(256)
)
_BIGRAM = re.compile(r"[\u3400-\u9fff]{2}")
_MIN_BITS = 1024
_BITS_PER_TERM = 12


def batch_terms(index: Sequence[str]) -> set[bytes]:
    """The ASCII words and CJK bigrams in a batch's index texts (UTF-8 bytes).

    One text at a time: each C call then holds the GIL for a fraction of a
    millisecond, where one call over a whole batch held it for tens of
    milliseconds and stalled the event loop the capture was offloaded from.
    """
    terms: set[bytes] = set()
    for text in index:
        if text.isascii():
            terms.update(text.encode("ascii").translate(_WORDS).split())
            continue
        # Non-ASCII characters become '?', a separator: no ASCII token spans one.
        terms.update(text.encode("ascii", "replace").translate(_WORDS).split())
        # index_text writes each bigram as its own space-separated token.
        terms.update(b.encode("utf-8") for b in _BIGRAM.findall(text))
    return terms


def build(terms: set[bytes]) -> bytes:
    """A one-hash bit filter over `terms`, 12 bits a term: about 8 % false "maybe".

    Its pages count against the archive's ceiling (about 56 KiB for a batch of
    256 records of 10,000 characters, 1.5 % of the batch), so it is kept small:
    a false "maybe" costs only one probe of ~10 microseconds.
    """
    size = max(_MIN_BITS, (_BITS_PER_TERM * len(terms) + 7) // 8 * 8)
    bits = bytearray(size // 8)
    crc = zlib.crc32
    for term in terms:
        at = crc(term) % size
        bits[at >> 3] |= 1 << (at & 7)
    return bytes(bits)


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
