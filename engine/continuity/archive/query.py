"""Searching the archive's per-batch FTS5 tables, fast on a full archive.

Each batch has its own contentless FTS5 table and a term filter (term_filter.py); a
search runs in one read transaction, and a batch whose filter rules a term out is
never asked about it. Per tier, newest batches first: probe statements (a UNION ALL
over a few batches' tables, no ranking; see `_chunks`) find which batches match,
then each is fetched directly or, with more matches than places left, ranked by
bm25 over its newest `RANK_WINDOW` matches; it stops once enough originals are in,
with the same hits as if every batch had been probed.

Tiers: sources holding every term; only when no original holds them all, sources
holding some. Continuity-tool echoes only fill places the originals leave. Every
lookup goes through FTS5 or a primary key; no statement scans the stored text.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from engine.continuity.archive import fts, term_filter
from engine.continuity.archive.records import Hit, Source


def fts_table(batch_id: int) -> str:
    """The FTS5 table of one batch (the int() keeps the name injection-proof)."""
    return f"fts_{int(batch_id)}"


RANK_WINDOW = 64
"""A batch with more matches than places left is ranked over its newest this many matches."""

# Columns every row fetch returns, in this order.
_COLUMNS = "s.id, s.source_id, s.role, s.seq, s.truncated, s.echo"


def search_batches(
    conn: sqlite3.Connection,
    terms: list[fts.Term],
    batch_ids: list[int],
    *,
    role: str | None,
    limit: int,
    partial: bool = True,
    damaged: dict[int, str] | None = None,
    filters: dict[int, bytes] | None = None,
) -> list[Hit]:
    """Up to `limit` hits from `batch_ids` (newest first), originals before echoes.

    Sources holding only some of the terms are searched for only when no
    original holds them all (and `partial` allows it). A batch whose table
    or rows cannot be read is skipped and named in `damaged` (batch id ->
    why), so one broken batch never hides the others. `filters` caches the
    batches' term filters (batch id -> bits) between searches; the filters
    of batches never seen before are read into it.
    """
    damaged = {} if damaged is None else damaged
    conn.execute("BEGIN")
    try:
        present = _present(conn, batch_ids)
        bits = _filters(conn, present, filters if filters is not None else {})
        may = term_filter.possible(bits, [term_filter.term_hash(t) for t in terms])
        originals: list[tuple[Any, ...]] = []
        echoes: list[tuple[Any, ...]] = []
        seen: set[int] = set()
        holding: dict[fts.Term, tuple[set[int], set[int]]] = {}
        for every in (True, False) if len(terms) > 1 else (True,):
            if not present or (not every and (originals or not partial)):
                break
            # Only the batches whose filter leaves the tier possible are asked.
            allowed = may[0] if every else may[1]
            expression = fts.fts_query(terms, every=every)
            for chunk in _chunks(conn, terms, present, allowed, every, holding, damaged):
                probe = _probe(conn, expression, chunk, limit, damaged, allowed)
                for batch_id in chunk:
                    found = probe.get(batch_id)
                    if not found:
                        continue
                    try:
                        rows = _rows(conn, expression, batch_id, found, role, limit, len(originals))
                    except sqlite3.Error as exc:
                        damaged.setdefault(batch_id, str(exc))
                        continue
                    for row in rows:
                        if row[0] in seen:
                            continue
                        seen.add(row[0])
                        (echoes if row[5] else originals).append((*row, batch_id, every))
                    if len(originals) >= limit:
                        break
                if len(originals) >= limit:
                    break
        chosen = originals[:limit] + echoes[: max(0, limit - len(originals))]
        return _with_text(conn, chosen, terms, damaged)
    finally:
        conn.execute("COMMIT")


def _present(conn: sqlite3.Connection, ids: list[int]) -> list[int]:
    if not ids:
        return []
    # A range on the primary key (at most max_batches rows) binds one value, not an IN list.
    stored = {r[0] for r in conn.execute("SELECT id FROM batches WHERE id >= ?", (min(ids),))}
    return [i for i in ids if i in stored]


def _filters(conn: sqlite3.Connection, ids: list[int], cache: dict[int, bytes]) -> dict[int, bytes]:
    """Each batch's term filter (b"" when it has none: captured before schema 3, or unreadable).

    A filter is written with its batch and never changes, so it is read once.
    """
    missing = [i for i in ids if i not in cache]
    if missing:
        try:
            rows = conn.execute(
                "SELECT batch_id, bits FROM term_filters WHERE batch_id >= ?", (min(missing),)
            ).fetchall()
        except sqlite3.Error:  # a file of schema 2 (read before a writer migrates it)
            rows = []
        found = {b: bits for b, bits in rows if type(b) is int and type(bits) is bytes}
        for i in missing:
            cache[i] = found.get(i, b"")
        if len(cache) > 2 * len(ids) + 8:  # forget evicted batches
            for gone in cache.keys() - set(ids):
                del cache[gone]
    return {i: cache[i] for i in ids}


_HEAD = 2
_NEXT = 6
"""Batches in the first and second probe, newest first; the third probe takes the rest."""


def _chunks(
    conn: sqlite3.Connection,
    terms: list[fts.Term],
    ids: list[int],
    allowed: set[int],
    every: bool,
    holding: dict[fts.Term, tuple[set[int], set[int]]],
    damaged: dict[int, str],
) -> Iterator[list[int]]:
    """The batches to probe, newest first, in growing groups; past the newest, only candidates.

    A query of several terms that the newest batches did not settle is
    narrowed first: a table can hold all terms only if it holds the longest
    (likely the rarest), and some term only if it holds one of them. One
    term per table costs a single index seek where the whole expression
    costs one per term, and a rare code or a query that matches nothing
    would otherwise pay every term in every table, twice (both tiers).
    Which tables were asked about a term, and which hold it, is kept in
    `holding` for the second tier (whose batches may differ: see the filters).

    Groups are cut from all of `ids`, so each group's statement is one
    SQLite already holds; the batches outside `allowed` are switched off in
    it by a bound flag (see `_probe`), and a group with none allowed is
    skipped.
    """
    head, rest = ids[:_HEAD], ids[_HEAD:]
    if allowed.intersection(head):
        yield head
    if not rest:
        return
    if len(terms) > 1:
        wanted = [max(terms, key=lambda t: len(t.text))] if every else terms
        candidates: set[int] = set()
        for term in wanted:
            probed, found = holding.setdefault(term, (set(), set()))
            unasked = {b for b in rest if b in allowed and b not in probed}
            if unasked:
                found.update(_probe(conn, term.fts(), rest, 0, damaged, unasked))
                probed.update(unasked)
            candidates |= found
        narrowed = [b for b in rest if b in candidates and b in allowed]
        if len(narrowed) < len(rest):
            # A set of tables seen for the first time: one UNION ALL over it
            # would be prepared afresh (10-15 microseconds a table), while a
            # one-table probe is a statement SQLite already holds.
            yield from ([b] for b in narrowed)
            return
    for group in (rest[:_NEXT], rest[_NEXT:]):
        if allowed.intersection(group):
            yield group


_NARROW = 4
"""A probe asking at most this many of its group's tables names only those: preparing a
statement connects every FTS5 table it names (~40 microseconds each on a fresh
connection, as `--all` has), even one its flag switches off."""


@lru_cache(maxsize=256)
def _probe_sql(ids: tuple[int, ...]) -> str:
    # ?3, ?4, ...: one flag a table; a false flag is a constant condition,
    # so SQLite skips that table's FTS5 query (32 tables off: ~8 microseconds).
    return " UNION ALL ".join(
        f"SELECT {b} AS b, rowid FROM (SELECT rowid FROM {fts_table(b)} "
        f"WHERE ?{n + 3} AND {fts_table(b)} MATCH ?1 LIMIT ?2)"
        for n, b in enumerate(ids)
    )


def _probe(
    conn: sqlite3.Connection,
    expression: str,
    ids: list[int],
    limit: int,
    damaged: dict[int, str],
    allowed: set[int],
) -> dict[int, list[int]]:
    """One statement over the `allowed` of `ids`; on failure, one per batch to find the broken."""
    found: dict[int, list[int]] = {}
    asked = [b for b in ids if b in allowed]
    if len(asked) <= _NARROW < len(ids):
        ids = asked  # see _NARROW
    flags = [b in allowed for b in ids]
    try:
        sql = _probe_sql(tuple(ids))
        for batch_id, rowid in conn.execute(sql, (expression, limit + 1, *flags)):
            found.setdefault(batch_id, []).append(rowid)
        return found
    except sqlite3.Error:
        found = {}
    for one in ids:
        if one not in allowed:
            continue
        try:
            rows = conn.execute(_probe_sql((one,)), (expression, limit + 1, True)).fetchall()
        except sqlite3.Error as exc:
            damaged.setdefault(one, str(exc))
            continue
        if rows:
            found[one] = [rowid for _, rowid in rows]
    return found


def _rows(
    conn: sqlite3.Connection,
    expression: str,
    batch_id: int,
    rowids: list[int],
    role: str | None,
    limit: int,
    have: int,
) -> list[tuple[Any, ...]]:
    """One batch's candidates: ranked by bm25 when it has more than the places left."""
    role_clause = " AND s.role = ?" if role else ""
    if len(rowids) <= limit - have:
        marks = ",".join("?" * len(rowids))
        params: tuple[Any, ...] = (*rowids, role) if role else tuple(rowids)
        return conn.execute(
            f"SELECT {_COLUMNS} FROM sources s WHERE s.id IN ({marks}){role_clause} "
            "ORDER BY s.id DESC",
            params,
        ).fetchall()
    table = fts_table(batch_id)
    if role:
        return conn.execute(
            f"SELECT {_COLUMNS} FROM {table} JOIN sources s ON s.id = {table}.rowid "
            f"WHERE {table} MATCH ?{role_clause} ORDER BY {table}.rank LIMIT ?",
            (expression, role, limit * 2),
        ).fetchall()
    # bm25 over the batch's newest matches only (a common word matches every source,
    # and ranking them all is slow), then the join for the rows kept only. The window
    # is FTS5's own rowid-DESC scan, scored by a bm25() call per row and sorted by
    # SQLite: with `ORDER BY rank` FTS5 ranks every match before applying a rowid
    # bound. Equal scores keep the older source first, as FTS5's own ranking did.
    return conn.execute(
        f"SELECT {_COLUMNS} FROM (SELECT rowid AS r, bm25({table}) AS k FROM {table} "
        f"WHERE {table} MATCH ?1 ORDER BY rowid DESC LIMIT ?3) "
        "JOIN sources s ON s.id = r ORDER BY k, r LIMIT ?2",
        (expression, limit * 2, max(RANK_WINDOW, limit * 8)),
    ).fetchall()


def _with_text(
    conn: sqlite3.Connection,
    chosen: list[tuple[Any, ...]],
    terms: list[fts.Term],
    damaged: dict[int, str],
) -> list[Hit]:
    if not chosen:
        return []
    marks = ",".join("?" * len(chosen))
    texts = dict(
        conn.execute(f"SELECT id, text FROM sources WHERE id IN ({marks})", [c[0] for c in chosen])
    )
    hits = []
    for row_id, sid, role, seq, trunc, echo, batch, every in chosen:
        text = texts.get(row_id)
        if not (type(text) is str and type(sid) is str and type(role) is str and type(seq) is int):
            damaged.setdefault(batch, f"a stored source is malformed (row {row_id})")
            continue
        source = Source(sid, role, seq, text, bool(trunc), bool(echo), batch)
        hits.append(Hit(source, _matched(text, terms, every), every))
    return hits


def _matched(text: str, terms: list[fts.Term], every: bool) -> int:
    """Terms a hit holds: all of them in the first tier, else a count by substring.

    A substring may sit inside a longer word ("pr" in "sprint"), so the count
    can reach every term for a hit FTS5 found lacking one; such a hit holds
    at most all but one (it must never read as `matched: "all"`).
    """
    if every:
        return len(terms)
    folded = text.casefold()
    return min(len(terms) - 1, sum(1 for term in terms if term.text in folded))
