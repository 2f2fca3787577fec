"""Closing the capture window: re-archiving what a crash left unarchived.

A compaction commits its checkpoint first and archives the originals right
after. A process killed between the two leaves a checkpoint whose originals
are in no batch, and nothing in the log says so but the missing end of the
bracket. The originals are still in the log, though: they are the
`replaced` seqs of the `compact/summary`, as the surface held them just
before it. So when the thread is next opened for writing, each such
compaction is captured again from the log, under the same batch key (its
`compact/start` seq: a batch that did reach the archive before the crash is
found, not duplicated), and `compact/archived` records the reference, or the
failure, where every reader looks for it. Until then the status reads
`unavailable` (see `status.scan_history`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.continuity.extract import extract_records, hidden_seqs, surface_inputs
from engine.continuity.status import (
    COMPACT_ARCHIVED,
    archive_failure,
    archive_reference,
    scan_history,
    scope_binding,
)
from engine.continuity.store import ArchiveError, ArchiveStore
from engine.log import Event, LogWriteError, SessionLog
from engine.surface import Entry, Surface


def originals(events: Sequence[Event], start: int) -> tuple[list[Entry], int] | None:
    """The entries compaction `start` replaced, and the index of its summary event."""
    for index in range(start, len(events)):
        event = events[index]
        if event.get("kind") == "compact/summary" and event.get("start") == start:
            replaced = set(event.get("replaced") or ())
            surface = Surface.from_events(events[:index])
            return [entry for entry in surface.entries if entry.seq in replaced], index
    return None


def recapture(
    log: SessionLog, store: ArchiveStore, *, user_id: str, thread_id: str
) -> list[dict[str, Any]]:
    """Archive every committed-but-unarchived compaction again; blocking (run off the loop).

    Returns the `archive` fields written, one per compaction recovered.
    """
    scope = scope_binding(user_id, thread_id)
    written: list[dict[str, Any]] = []
    for start in scan_history(log.events, scope).unarchived:
        found = originals(log.events, start)
        if found is None:
            continue
        entries, index = found
        try:
            records = extract_records(surface_inputs(entries, hidden_seqs(log.events[:index])))
            archive = archive_reference(store.capture(start, records), scope)
        except (ArchiveError, OSError) as exc:
            archive = archive_failure(scope, str(exc))
        try:
            log.append(COMPACT_ARCHIVED, start=start, archive=archive, recovered=True)
        except LogWriteError:
            break  # still unarchived in the log's eyes: reported, and tried again next time
        written.append(archive)
    return written
