"""Writing one batch inside a capture's transaction: retention first, then the rows.

The caller (`ArchiveStore.capture`) holds `BEGIN IMMEDIATE`, so competing
captures serialize their retention decisions. The oldest batches are evicted
first (to respect `max_batches`, then until the estimated size fits under the
page ceiling) and the new batch is inserted with its term filter. Evicting a
batch drops its own FTS5 table, which frees its pages at once, so eviction
makes room inside the same transaction (a shared FTS table would only gain
tombstones: SQLite 3.40 has no contentless_delete or secure-delete).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from engine.continuity.archive import fts, term_filter
from engine.continuity.archive.query import fts_table
from engine.continuity.archive.records import Source

# Size estimate for a new batch, in bytes of database pages: the sources b-tree and
# the FTS index each cost about their text. The factors err high: over-estimating
# evicts at most one batch early, under-estimating fails the capture at the ceiling.
_TEXT_FACTOR = 1.25
_INDEX_FACTOR = 1.5
_ROW_OVERHEAD = 96
_TABLE_PAGES = 16  # the FTS5 shadow tables and schema growth of a new batch
_HASH_BYTES = 64 * 2**20  # FTS5 in-memory hash for one capture (its default is smaller)


@dataclass(frozen=True, slots=True)
class CaptureResult:
    batch_id: int
    records: int
    omitted_records: int
    truncated_count: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """A batch ready to write: cut to the limits and tokenized, before any lock is taken."""

    sources: list[Source]
    index: list[str]
    omitted: int
    truncated: int
    need_bytes: int


def prepare(sources: Sequence[Source], *, max_records: int, max_chars: int) -> PreparedBatch:
    """Keep the newest `max_records` sources, cut each to `max_chars`, tokenize them.

    The newest are the ones the next turns are likeliest to need, and the
    summary had the whole span. Tokenizing here, outside the write lock,
    means other writers need not wait for it.
    """
    limit = max(0, int(max_records))
    kept = list(sources[len(sources) - limit :] if len(sources) > limit else sources)
    kept = [s.cut(max_chars) for s in kept]
    index = [fts.index_text(s.text) for s in kept]
    return PreparedBatch(
        kept,
        index,
        len(sources) - len(kept),
        sum(1 for s in kept if s.truncated),
        estimate_bytes(kept, index) + term_filter.max_bytes(index) + _ROW_OVERHEAD,
    )


def write_batch(
    conn: sqlite3.Connection,
    batch: PreparedBatch,
    *,
    batch_key: int,
    created: str,
    max_batches: int,
    max_page_count: int,
) -> tuple[CaptureResult, list[int]]:
    """Inside the caller's transaction: the batch this key already made, or a new one.

    A duplicate is the batch this key made holding exactly these records (their
    source ids, in order), and is protected from the retention pass that runs
    for it. A batch under the key with other records is another compaction's:
    one from a part of the log that was since set aside (a quarantine), whose
    seqs the log then handed out again. It is set aside in turn (`set_aside`:
    still stored, under a key no compaction has) and the new one is written.
    Also returns the hashes of the new batch's tokens (none for a duplicate),
    which its term filter and the archive's (archive_terms.py) are built from.
    """
    done = existing(conn, batch_key)
    limits = {"max_batches": max_batches, "max_page_count": max_page_count}
    if done is not None:
        if stored_ids(conn, done.batch_id) == [s.source_id for s in batch.sources]:
            retain(conn, keep=done.batch_id, room_for=0, need_bytes=0, **limits)
            return done, []
        set_aside(conn, done.batch_id)
    retain(conn, keep=None, room_for=1, need_bytes=batch.need_bytes, **limits)
    batch_id = insert_batch(
        conn,
        batch_key=batch_key,
        created=created,
        sources=batch.sources,
        index=batch.index,
        omitted=batch.omitted,
        truncated=batch.truncated,
    )
    # The filter holds the tokens FTS5 just indexed (read back in C, see term_filter).
    hashed = term_filter.hash_terms(term_filter.read_terms(conn, fts_table(batch_id)))
    bits = term_filter.build_hashed(hashed, term_filter.size_for(len(hashed)))
    conn.execute("INSERT INTO term_filters (batch_id, bits) VALUES (?, ?)", (batch_id, bits))
    return CaptureResult(batch_id, len(batch.sources), batch.omitted, batch.truncated), hashed


def estimate_bytes(sources: Sequence[Source], index: Sequence[str]) -> int:
    """Pages' worth of bytes the new batch will take (see the factors above)."""
    return math.ceil(
        sum(
            _TEXT_FACTOR * _utf8_bytes(s.text) + _INDEX_FACTOR * _utf8_bytes(i) + _ROW_OVERHEAD
            for s, i in zip(sources, index, strict=True)
        )
    )


def _utf8_bytes(text: str) -> int:
    """The UTF-8 length; ASCII text (most of it) without encoding a copy."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def existing(conn: sqlite3.Connection, batch_key: int) -> CaptureResult | None:
    """The batch an earlier capture with this key made, as a duplicate result."""
    row = conn.execute(
        "SELECT id, records, omitted, truncated FROM batches WHERE batch_key = ?", (batch_key,)
    ).fetchone()
    return None if row is None else CaptureResult(row[0], row[1], row[2], row[3], duplicate=True)


def stored_ids(conn: sqlite3.Connection, batch_id: int) -> list[object]:
    """The source ids a stored batch holds, in capture order (as SQLite gives them)."""
    rows = conn.execute("SELECT source_id FROM sources WHERE batch_id = ? ORDER BY id", (batch_id,))
    return [row[0] for row in rows]


def set_aside(conn: sqlite3.Connection, batch_id: int) -> None:
    """Move a batch off its key, to `-batch_id` (no compaction's: their keys are log
    seqs, from 1), so the key can name a new batch. It is kept and read like any other
    batch, but no reference on the log reaches it: only what the log still references
    is ever searched. Retention evicts it in its turn."""
    conn.execute("UPDATE batches SET batch_key = ? WHERE id = ?", (-batch_id, batch_id))


def retain(
    conn: sqlite3.Connection,
    *,
    max_batches: int,
    max_page_count: int,
    keep: int | None,
    room_for: int,
    need_bytes: int,
) -> None:
    """Evict the oldest batches (never `keep`) until count and estimated size fit."""
    limit = max(1, int(max_batches))
    need_pages = 0
    if need_bytes:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        need_pages = math.ceil(need_bytes / page) + _TABLE_PAGES
    ids = [r[0] for r in conn.execute("SELECT id FROM batches ORDER BY id")]
    evictable = [i for i in ids if i != keep]
    count = len(ids)
    while evictable and count + room_for > limit:
        _evict(conn, evictable.pop(0))
        count -= 1
    while evictable and need_pages and _free_pages(conn, max_page_count) < need_pages:
        _evict(conn, evictable.pop(0))


def _free_pages(conn: sqlite3.Connection, max_page_count: int) -> int:
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    return int(max_page_count - (pages - free))


def _evict(conn: sqlite3.Connection, batch_id: int) -> None:
    conn.execute("DELETE FROM sources WHERE batch_id = ?", (batch_id,))
    conn.execute(f"DROP TABLE IF EXISTS {fts_table(batch_id)}")
    conn.execute("DELETE FROM term_filters WHERE batch_id = ?", (batch_id,))
    conn.execute("DELETE FROM batches WHERE id = ?", (batch_id,))


def insert_batch(
    conn: sqlite3.Connection,
    *,
    batch_key: int,
    created: str,
    sources: Sequence[Source],
    index: Sequence[str],
    omitted: int,
    truncated: int,
) -> int:
    """Write the batch row, its sources and its own FTS5 table; returns the batch id."""
    cur = conn.execute(
        "INSERT INTO batches (batch_key, created, records, omitted, truncated) "
        "VALUES (?, ?, ?, ?, ?)",
        (batch_key, created, len(sources), omitted, truncated),
    )
    batch_id = int(cur.lastrowid or 0)
    table = fts_table(batch_id)
    conn.execute(
        f"CREATE VIRTUAL TABLE {table} USING fts5("
        f"tokens, content='', tokenize='{fts.FTS_TOKENIZER}')"
    )
    # One segment per batch: with the default hash a large batch is flushed
    # as several segments, and every query probes each of them.
    conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('hashsize', ?)", (_HASH_BYTES,))
    base = conn.execute("SELECT coalesce(max(id), 0) FROM sources").fetchone()[0] + 1
    conn.executemany(
        "INSERT INTO sources (id, batch_id, source_id, role, seq, truncated, echo, text) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            (base + n, batch_id, s.source_id, s.role, s.seq, int(s.truncated), int(s.echo), s.text)
            for n, s in enumerate(sources)
        ),
    )
    conn.executemany(
        f"INSERT INTO {table} (rowid, tokens) VALUES (?, ?)",
        ((base + n, text) for n, text in enumerate(index)),
    )
    return batch_id
