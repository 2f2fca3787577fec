"""Shared builders for the continuity tests (no tests here).

`compact()` plays the compaction engineer's part of the contract: it moves
the oldest surface entries into a checkpoint, captures them into the archive
and records the reference (or the failure) on `compact/end`, exactly as the
log contract in engine/continuity/status.py describes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import log as k
from engine.config import TaskContinuityConfig
from engine.continuity import (
    ArchiveStore,
    CaptureError,
    archive_failure,
    archive_path,
    archive_reference,
    extract_records,
    hidden_seqs,
    scope_binding,
    surface_inputs,
)
from engine.log import SessionLog
from engine.session import Thread
from engine.surface import Surface

USER = "alice"


def config(**overrides: Any) -> TaskContinuityConfig:
    return TaskContinuityConfig(**overrides)


def new_thread(home: Path, thread_id: str = "t1", user: str = USER) -> Thread:
    return Thread.create(home, user, thread_id)


def store_for(thread: Thread, **kw: Any) -> ArchiveStore:
    cfg = kw.pop("cfg", None) or config()
    return ArchiveStore(archive_path(thread.dir), cfg, **kw)


def say(log: SessionLog, user: str, reply: str) -> None:
    log.append(k.USER_MESSAGE, text=user)
    log.append(k.ASSISTANT_MESSAGE, content=reply, tool_calls=[])


def compact(
    log: SessionLog,
    store: ArchiveStore | None,
    *,
    user: str = USER,
    thread: str = "t1",
    keep: int = 0,
    archive: Any = None,
) -> dict[str, Any]:
    """A successful compaction of all but the last `keep` surface entries."""
    surface = Surface.from_events(log.events)
    entries = surface.entries[: len(surface.entries) - keep] if keep else list(surface.entries)
    start = log.append(
        k.COMPACT_START, turn=None, range=[entries[0].seq, entries[-1].seq] if entries else []
    )
    records = extract_records(surface_inputs(entries, hidden_seqs(log.events)))
    summary = log.append(
        k.COMPACT_SUMMARY, summary="(summary without details)", replaced=[e.seq for e in entries]
    )
    log.append(
        k.USER_MESSAGE, text="(summary without details)", checkpoint={"summary": summary["seq"]}
    )
    scope = scope_binding(user, thread)
    if archive is None:
        if store is None:
            archive = archive_failure(scope, "no store")
        else:
            try:
                archive = archive_reference(store.capture(start["seq"], records), scope)
            except CaptureError as exc:
                archive = archive_failure(scope, str(exc))
    return log.append(k.COMPACT_END, start=start["seq"], archive=archive)
