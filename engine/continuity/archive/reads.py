"""Reading stored batches and sources back, row by row checked.

SQLite does not enforce column types, so every row is checked against what
capture wrote before it becomes a `Source`; a malformed row is reported
through `mark(batch id, why)` and skipped, so one broken batch never hides
the others (searching the FTS5 tables is in query.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.continuity.archive.records import Source

Mark = Callable[[int, str], None]
"""Records that a batch is damaged: (batch id, why)."""


@dataclass(frozen=True, slots=True)
class BatchInfo:
    id: int
    batch_key: int
    created: str
    records: int
    omitted_records: int
    truncated_count: int


_ROW_TYPES = (str, str, int, str, int, int, int)
_COLUMNS = "source_id, role, seq, text, truncated, batch_id, echo"


def _sound(row: Sequence[Any]) -> bool:
    """A `sources` row (in `_COLUMNS` order) with the types capture wrote."""
    return all(type(v) is t for v, t in zip(row, _ROW_TYPES, strict=True))


def _source(row: Sequence[Any]) -> Source:
    """A row `_sound` accepted, as the Source capture wrote."""
    sid, role, seq, text, truncated, batch, echo = row
    return Source(sid, role, seq, text, bool(truncated), bool(echo), batch)


def list_batches(conn: sqlite3.Connection) -> list[BatchInfo]:
    rows = conn.execute(
        "SELECT id, batch_key, created, records, omitted, truncated FROM batches ORDER BY id"
    )
    return [BatchInfo(*row) for row in rows]


def list_sources(conn: sqlite3.Connection, batch_id: int, mark: Mark) -> list[Source]:
    """Every source of one batch in capture order, text included, in one statement.

    The text is fetched as bytes and decoded here, so a row whose text is
    not valid UTF-8 marks its batch instead of failing the whole listing.
    """
    rows = conn.execute(
        "SELECT source_id, role, seq, CAST(text AS BLOB), truncated, batch_id, echo, "
        "typeof(text) FROM sources WHERE batch_id = ? ORDER BY id",
        (batch_id,),
    )
    out: list[Source] = []
    for *row, kind in rows:
        try:
            row[3] = bytes(row[3]).decode("utf-8") if kind == "text" else None
        except UnicodeDecodeError:
            row[3] = None
        if _sound(row):
            out.append(_source(row))
        else:
            mark(batch_id, f"a stored source is malformed ({row[0]!r:.40})")
    return out


def read_source(
    conn: sqlite3.Connection, source_id: str, batch_ids: Sequence[int], mark: Mark
) -> Source | None:
    """The source with this id in one of `batch_ids`, newest batch first."""
    marks = ",".join("?" * len(batch_ids))
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM sources "
        f"WHERE source_id = ? AND batch_id IN ({marks}) ORDER BY batch_id DESC",
        (source_id, *batch_ids),
    )
    for row in rows:
        if _sound(row):
            return _source(row)
        mark(row[5], f"stored source {source_id} is malformed")
    return None


def available_ids(
    conn: sqlite3.Connection, source_ids: Sequence[str], batch_ids: Sequence[int]
) -> set[str]:
    """Which of `source_ids` are stored in one of `batch_ids`."""
    sid_marks = ",".join("?" * len(source_ids))
    bid_marks = ",".join("?" * len(batch_ids))
    rows = conn.execute(
        f"SELECT DISTINCT source_id FROM sources WHERE source_id IN ({sid_marks}) "
        f"AND batch_id IN ({bid_marks})",
        (*source_ids, *batch_ids),
    )
    return {row[0] for row in rows}
