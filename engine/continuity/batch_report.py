"""The archive's batches as a report: what a front end lists, computed here once.

Every batch the thread's log or archive knows about, each with its state for
this position, and the sources of one batch. Both read the archive, so they
block: front ends call them from a worker with a `Snapshot` taken on the loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.continuity.archive.reads import BatchInfo
from engine.continuity.archive.records import Source
from engine.continuity.archive.schema import ArchiveError
from engine.continuity.archive.status import HistoryStatus, scan_history
from engine.continuity.context import Snapshot
from engine.events import CompactEnd

BatchState = Literal["reachable", "expired", "unlinked", "unreadable"]
"""reachable: stored and referenced from here; expired: referenced but no longer stored
(or the id now names another capture); unlinked: stored but not referenced from here;
unreadable: referenced, and the archive cannot be opened at all."""


@dataclass(frozen=True, slots=True)
class BatchRow:
    """One batch; counts from the store, or from the log once it is gone."""

    batch: int
    created: str
    """ISO-8601 UTC time of the capture ('' when unknown)."""
    records: int
    omitted: int
    truncated: int | None
    """None when the batch is gone and the log did not record the count."""
    state: BatchState


@dataclass(frozen=True, slots=True)
class BatchesReport:
    status: HistoryStatus
    reason: str | None
    rows: tuple[BatchRow, ...]
    """Newest first: the latest compaction is what the user most likely looks for."""


def batches_report(snapshot: Snapshot) -> BatchesReport:
    """The history status and every batch this thread's log or archive knows about."""
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


def batch_sources(snapshot: Snapshot, batch: int) -> list[Source]:
    """The sources of one stored batch in capture order, text included (one query)."""
    if snapshot.store is None:
        return []
    return snapshot.store.sources(batch)
