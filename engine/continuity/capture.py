"""The compaction → archive seam: what leaves the surface becomes one batch.

Storage failure never undoes a summary: the compaction still succeeds and
`compact/end` records the archive as unavailable instead of a batch.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any

from engine.continuity.archive.extract import extract_records, surface_inputs
from engine.continuity.archive.records import Source
from engine.continuity.archive.status import archive_failure, archive_reference, scan_history
from engine.continuity.archive.store import ArchiveError, ArchiveStore, CaptureResult
from engine.continuity.context import ContinuityContext
from engine.continuity.recovery import archive_lost
from engine.events import CompactArchived, LogEvent
from engine.log import paused_gc
from engine.surface import Entry
from engine.util.offload import run_drained

Capture = Callable[[int, list[Entry]], Awaitable[dict[str, Any]]]


def capture_hook(context: ContinuityContext) -> Capture:
    """The `capture` callable CompactService runs after a committed summary."""

    async def capture(batch_key: int, entries: list[Entry]) -> dict[str, Any]:
        store = context.store
        if store is None:
            return archive_failure(context.scope, "task continuity has no archive")
        try:
            # The loop hands over the injections' seqs; the worker makes the records.
            hidden = frozenset(context.hidden_seqs())
            result = await run_drained(prepare_and_store, store, batch_key, entries, hidden)
        except (ArchiveError, OSError) as exc:
            return archive_failure(context.scope, str(exc))
        except Exception as exc:  # any other failure is still only an archive failure
            return archive_failure(context.scope, f"{type(exc).__name__}: {exc}")
        await _retry_lost(context, store, skip=batch_key)
        return archive_reference(result, context.scope)

    return capture


def prepare_and_store(
    store: ArchiveStore,
    batch_key: int,
    entries: Sequence[Entry],
    hidden: Collection[int],
) -> CaptureResult:
    """Prepare the records and store them in one worker call, collection paused throughout.

    The records are made, written and dropped here, so the loop never frees
    them and the collector never sees them: paused only for the preparation,
    the tens of thousands of objects it made would be collected, holding the
    GIL, by whichever thread allocated next, the loop included. `entries` is
    the transaction's own list of the span (copying it on the loop would touch
    every object there); `hidden` the seqs of injected context.
    """
    with paused_gc():
        return store.capture(batch_key, prepare_records(entries, hidden))


def prepare_records(entries: Sequence[Entry], hidden: Collection[int]) -> list[Source]:
    """The archive records for the replaced entries: blocking work for a worker thread.

    On a long thread the hashing and text extraction would freeze the UI loop
    after every commit. It reads only its arguments (snapshots), never the live
    log or surface. Collection is paused meanwhile: the records it allocates would
    set off full collections over the whole thread, holding the GIL, and the loop
    would stall behind them just the same.
    """
    with paused_gc():
        return extract_records(surface_inputs(entries, set(hidden)))


def _archive_lost(
    store: ArchiveStore,
    events: Sequence[LogEvent],
    records: list[LogEvent],
    count: int,
    scope: str,
    skip: int,
) -> list[tuple[int, dict[str, Any]]]:
    if not set(scan_history(records, scope).lost) - {skip}:
        return []  # nothing to read the line's events for
    return archive_lost(store, events[:count], scope, skip={skip}, records=records)


async def _retry_lost(context: ContinuityContext, store: ArchiveStore, *, skip: int) -> None:
    """The archive works again: store what an earlier failed capture left out.

    Only successes are recorded (a failure is already on record); the scan
    and the captures run off the loop, the appends here, on the loop, because
    front ends follow the log.
    """
    if context.append is None:
        return
    events = context.events()  # read in the worker up to this length: the log only appends
    records = context.recorded()
    try:
        done = await run_drained(
            _archive_lost, store, events, records, len(events), context.scope, skip
        )
    except Exception as exc:  # the failures stay on record as they are; say why once
        logging.getLogger("trove").warning("recapturing lost originals failed: %r", exc)
        return
    for start, archive in done:
        if "batch" in archive:
            with contextlib.suppress(OSError):
                context.append(CompactArchived(start=start, archive=archive, recovered=True))
