"""Shared builders for the continuity tests (no tests here).

`compact()` runs the real region transaction (`run_region`) with a stub
summarizer: it moves the oldest surface entries into a checkpoint, captures
them into the archive and records the reference (or the failure) on
`compact/end`, so the tests and the engine share one compaction.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import events as ev
from engine.compaction.selection import range_span
from engine.compaction.transaction import Region, run_region
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
from engine.surface import Entry, Surface
from engine.threads.thread import Thread

USER = "alice"


def config(**overrides: Any) -> TaskContinuityConfig:
    return TaskContinuityConfig(**overrides)


def new_thread(home: Path, thread_id: str = "t1", user: str = USER) -> Thread:
    return Thread.create(home, user, thread_id)


def store_for(thread: Thread, **kw: Any) -> ArchiveStore:
    cfg = kw.pop("cfg", None) or config()
    return ArchiveStore(archive_path(thread.dir), cfg, **kw)


def say(log: SessionLog, user: str, reply: str) -> None:
    log.append(ev.UserMessage(text=user))
    log.append(ev.AssistantMessage(content=reply, tool_calls=[]))


@dataclass
class _Summary:
    """What the stub summarizer returns: the fields `run_region` reads from a completion."""

    content: str = "(summary without details)"
    usage: dict[str, int] | None = None
    model: str = "stub-summarizer"


def compact(
    log: SessionLog,
    store: ArchiveStore | None,
    *,
    user: str = USER,
    thread: str = "t1",
    keep: int = 0,
    archive: Any = None,
) -> ev.CompactEnd:
    """A successful compaction of all but the last `keep` surface entries.

    The real region transaction (`run_region`) with a stub summarizer; the
    capture stores the entries in `store` (or records why it could not), or
    records `archive` as given.
    """
    surface = Surface.from_events(log.events)
    entries = surface.entries[: len(surface.entries) - keep] if keep else list(surface.entries)
    span = range_span(surface, entries[0].seq, entries[-1].seq)
    assert span is not None
    scope = scope_binding(user, thread)

    async def summarize(_: list[Entry]) -> _Summary:
        return _Summary()

    async def capture(key: int, replaced: list[Entry]) -> dict[str, Any]:
        if archive is not None:
            return dict(archive) if isinstance(archive, dict) else archive
        if store is None:
            return archive_failure(scope, "no store")
        records = extract_records(surface_inputs(replaced, hidden_seqs(log.events)))
        try:
            return archive_reference(store.capture(key, records), scope)
        except CaptureError as exc:
            return archive_failure(scope, str(exc))

    region = Region(owner=None, stability="span", flush=False)
    log.projections.insert(0, surface.apply)
    try:
        # Its own loop in a worker thread: callers may be sync tests or async ones.
        run = run_region(log, surface, span, region, summarize=summarize, capture=capture)
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, run).result()
    finally:
        log.projections.remove(surface.apply)
    end = log.events[-1]
    assert isinstance(end, ev.CompactEnd)
    return end
