"""Everything the inspector reads from the archive; every function here blocks.

SQLite reads can wait on a capture's write lock (up to its busy timeout), so
the tabs call these only from workers (`asyncio.to_thread`), never on the
event loop. Each takes a `Snapshot` taken on the loop (a cheap copy of the
log events and the active messages), so a read sees one consistent position
of the thread even while the conversation moves on.

Search, read and notes go through the same `HistoryView` and `notebook_report`
as the model's tools and the CLI: the inspector shows exactly what the model
can see, with the same statuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.continuity import ArchiveError, BatchInfo, Snapshot
from engine.continuity.status import scan_history
from engine.continuity.tools import notebook_report
from engine.events import CompactEnd
from engine.safe_text import safe_text
from tui.inspector.status_words import BatchState

PREVIEW_CHARS = 120


@dataclass(frozen=True)
class BatchRow:
    """One batch as the table shows it; counts from the store, or from the log once expired."""

    batch: int
    created: str
    """ISO-8601 UTC time of the capture ('' when unknown)."""
    records: int
    omitted: int
    truncated: int | None
    """None when the batch is gone and the log did not record the count."""
    state: BatchState


@dataclass(frozen=True)
class BatchesReport:
    status: str
    reason: str | None
    rows: tuple[BatchRow, ...]
    """Newest first: the latest compaction is what the user most likely looks for."""


@dataclass(frozen=True)
class SourceRow:
    source_id: str
    role: str
    seq: int
    chars: int
    truncated: bool
    preview: str
    """The start of the text on one line, so the user can tell sources apart."""


def batches_report(snapshot: Snapshot) -> BatchesReport:
    """The history status and every batch this thread's log or archive knows about.

    Stored batches the position can reach are `reachable`; batches the log
    references but the store no longer holds are `expired` (or `unreadable`
    when the archive cannot be opened at all).
    """
    view = snapshot.view()
    scan = scan_history(snapshot.events, snapshot.scope)
    stored: list[BatchInfo] = []
    unreadable = False
    store = snapshot.store
    if store is not None and store.path.is_file():
        try:
            stored = store.batches()
        except ArchiveError:
            unreadable = True
    resolution = view.resolution
    reachable = set(resolution.reachable)
    expired = set(resolution.expired)
    rows: dict[int, BatchRow] = {}
    for info in stored:
        state: BatchState = "reachable" if info.id in reachable else "unlinked"
        if info.id in expired:
            state = "expired"  # the id is stored but names a different capture
        rows[info.id] = BatchRow(
            info.id, info.created, info.records, info.omitted_records, info.truncated_count, state
        )
    ends = {e.seq: e.ts for e in snapshot.events if isinstance(e, CompactEnd)}
    for ref in scan.refs:
        if ref.batch in rows and rows[ref.batch].state != "expired":
            continue
        rows[ref.batch] = BatchRow(
            ref.batch,
            ends.get(ref.seq, ""),
            ref.records,
            ref.omitted_records,
            None,
            "unreadable" if unreadable else "expired",
        )
    ordered = tuple(sorted(rows.values(), key=lambda r: r.batch, reverse=True))
    return BatchesReport(view.status, resolution.error, ordered)


def batch_sources(snapshot: Snapshot, batch: int) -> list[SourceRow]:
    """The sources of one stored batch in capture order, each with a one-line preview."""
    store = snapshot.store
    if store is None:
        return []
    rows: list[SourceRow] = []
    for summary in store.sources(batch):
        stored = store.read(summary.source_id, [batch])
        text = stored.text if stored is not None else ""
        flat = " ".join(safe_text(text[: PREVIEW_CHARS * 4]).split())
        rows.append(
            SourceRow(
                summary.source_id,
                safe_text(summary.role),
                summary.seq,
                summary.chars,
                summary.truncated,
                flat[:PREVIEW_CHARS],
            )
        )
    return rows


def search(snapshot: Snapshot, query: str) -> dict[str, Any]:
    """The `history_search` result the model would get for this query."""
    return snapshot.view().search(query)


def read(snapshot: Snapshot, source_id: str, offset: int) -> dict[str, Any]:
    """The `history_read` page the model would get (4,000 characters from `offset`)."""
    return snapshot.view().read(source_id, offset)


def notes(snapshot: Snapshot) -> dict[str, Any]:
    """The task notebook with each citation's status, and the history status."""
    return notebook_report(snapshot)
