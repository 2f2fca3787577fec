"""Closing the capture window: re-archiving what a crash left unarchived.

A compaction commits its checkpoint, then archives the originals; a kill in between
leaves a checkpoint whose originals are in no batch. They are still in the log (the
`replaced` seqs of the `compact/summary`), so when the thread is next opened for
writing each such compaction is captured again under the same batch key (a batch
that did reach the archive is found, not duplicated), and `compact/archived`
records the reference or the failure. Until then the status reads `unavailable`.
A failed capture is retried the same way, at the next open and after the next
successful capture.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from engine.continuity.archive.extract import extract_records, hidden_seqs, surface_inputs
from engine.continuity.archive.status import (
    archive_failure,
    archive_reference,
    scan_history,
    scope_binding,
)
from engine.continuity.archive.store import ArchiveError, ArchiveStore
from engine.events import CompactArchived, CompactSummary, LogEvent
from engine.log import LogWriteError, SessionLog
from engine.surface import Entry, Surface


def originals(events: Sequence[LogEvent], start: int) -> tuple[list[Entry], int] | None:
    """The entries compaction `start` replaced, and the index of its summary event."""
    # By seq, not by index: on a rewound thread's line seqs have gaps (engine.log.line).
    for index, event in enumerate(events):
        if isinstance(event, CompactSummary) and event.start == start:
            replaced = set(event.replaced or ())
            surface = Surface.from_events(events[:index])
            return [entry for entry in surface.entries if entry.seq in replaced], index
    return None


def archive_lost(
    store: ArchiveStore,
    events: Sequence[LogEvent],
    scope: str,
    *,
    skip: Collection[int] = (),
    records: Sequence[LogEvent] | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """Capture every compaction whose originals are in no batch; blocking.

    Returns (start seq, `archive` field) for each: a reference, or the failure.
    `records` (engine.log.state) say which are lost without reading `events`, which
    are read only when one is (a long log's older events come from its file).
    """
    done: list[tuple[int, dict[str, Any]]] = []
    for start in scan_history(records if records is not None else events, scope).lost:
        if start in skip:
            continue
        found = originals(events, start)
        if found is None:
            continue
        entries, index = found
        try:
            sources = extract_records(surface_inputs(entries, hidden_seqs(events[:index])))
            archive = archive_reference(store.capture(start, sources), scope)
        except (ArchiveError, OSError) as exc:
            archive = archive_failure(scope, str(exc))
        done.append((start, archive))
    return done


def recapture(
    log: SessionLog, store: ArchiveStore, *, user_id: str, thread_id: str
) -> list[dict[str, Any]]:
    """Archive what a crash or a failed capture left out, and record it; blocking.

    Runs when the thread is opened for writing, before anything follows the
    log, so it may append from a worker thread. Returns the `archive` fields.
    """
    scope = scope_binding(user_id, thread_id)
    written: list[dict[str, Any]] = []
    for start, archive in archive_lost(store, log.events, scope, records=log.state.records):
        try:
            log.append(CompactArchived(start=start, archive=archive, recovered=True))
        except LogWriteError:
            break  # still lost in the log's eyes: reported, and tried again next time
        written.append(archive)
    return written
