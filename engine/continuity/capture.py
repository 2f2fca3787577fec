"""The compaction → archive seam: what leaves the surface becomes one batch.

Storage failure never undoes a summary: the compaction still succeeds and
`compact/end` records the archive as unavailable instead of a batch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from engine.continuity.extract import extract_records, hidden_seqs, surface_inputs
from engine.continuity.status import archive_failure, archive_reference
from engine.continuity.store import ArchiveError, capture_offloaded
from engine.continuity.tools import ContinuityContext
from engine.surface import Entry

Capture = Callable[[int, list[Entry]], Awaitable[dict[str, Any]]]


def capture_hook(context: ContinuityContext) -> Capture:
    """The `capture` callable CompactService runs after a committed summary."""

    async def capture(batch_key: int, entries: list[Entry]) -> dict[str, Any]:
        store = context.store
        if store is None:
            return archive_failure(context.scope, "task continuity has no archive")
        try:
            records = extract_records(surface_inputs(entries, hidden_seqs(context.events())))
            result = await capture_offloaded(store, batch_key, records)
        except (ArchiveError, OSError) as exc:
            return archive_failure(context.scope, str(exc))
        except Exception as exc:  # any other failure is still only an archive failure
            return archive_failure(context.scope, f"{type(exc).__name__}: {exc}")
        return archive_reference(result, context.scope)

    return capture
