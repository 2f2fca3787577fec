"""The compaction → archive seam: what leaves the surface becomes one batch.

Storage failure never undoes a summary: the compaction still succeeds and
`compact/end` records the archive as unavailable instead of a batch.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from engine.continuity.context import ContinuityContext
from engine.continuity.extract import extract_records, hidden_seqs, surface_inputs
from engine.continuity.records import Source
from engine.continuity.recovery import archive_lost
from engine.continuity.status import archive_failure, archive_reference
from engine.continuity.store import ArchiveError, ArchiveStore, capture_offloaded
from engine.events import CompactArchived, LogEvent
from engine.log import paused_gc
from engine.offload import run_drained
from engine.surface import Entry

Capture = Callable[[int, list[Entry]], Awaitable[dict[str, Any]]]


def capture_hook(context: ContinuityContext) -> Capture:
    """The `capture` callable CompactService runs after a committed summary."""

    async def capture(batch_key: int, entries: list[Entry]) -> dict[str, Any]:
        store = context.store
        if store is None:
            return archive_failure(context.scope, "task continuity has no archive")
        try:
            # A snapshot on the loop (two list copies); the preparation in a worker.
            records = await run_drained(prepare_records, list(entries), list(context.events()))
            result = await capture_offloaded(store, batch_key, records)
        except (ArchiveError, OSError) as exc:
            return archive_failure(context.scope, str(exc))
        except Exception as exc:  # any other failure is still only an archive failure
            return archive_failure(context.scope, f"{type(exc).__name__}: {exc}")
        await _retry_lost(context, store, skip=batch_key)
        return archive_reference(result, context.scope)

    return capture


def prepare_records(entries: list[Entry], events: list[LogEvent]) -> list[Source]:
    """The archive records for the replaced entries: blocking work for a worker thread.

    At 10,000 messages this is hundreds of milliseconds of hashing and text
    extraction, which on the UI loop would freeze the app after every commit.
    It reads only its arguments (snapshots), never the live log or surface.
    Collection is paused meanwhile: the records it allocates would otherwise
    set off full collections over the whole thread's objects, run here while
    holding the GIL, and the loop would stall behind them just the same.
    """
    with paused_gc():
        return extract_records(surface_inputs(entries, hidden_seqs(events)))


async def _retry_lost(context: ContinuityContext, store: ArchiveStore, *, skip: int) -> None:
    """The archive works again: store what an earlier failed capture left out.

    Only successes are recorded (a failure is already on record); the scan
    and the captures run off the loop, the appends here, on the loop, because
    front ends follow the log.
    """
    if context.append is None:
        return
    events = list(context.events())  # a snapshot: the log grows on the loop meanwhile
    try:
        done = await run_drained(archive_lost, store, events, context.scope, skip={skip})
    except Exception as exc:  # the failures stay on record as they are; say why once
        logging.getLogger("trove").warning("recapturing lost originals failed: %r", exc)
        return
    for start, archive in done:
        if "batch" in archive:
            with contextlib.suppress(OSError):
                context.append(CompactArchived(start=start, archive=archive, recovered=True))
