"""The one region transaction every compaction entry point runs.

Its ordering is the contract:
1. validate the selected positional range and inspect the durable tail;
2. reject a live unmatched compaction marker;
3. append compact/start synchronously;
4. prepare and await summarization;
5. revalidate the required stability;
6. append compact/summary and the replacement user/message;
7. make exactly one compact/end attempt;
8. flush when the caller asked for durability.
There is no other lock: steps 1-3 run without yielding to the event loop, so the
appended start is what any later entry point sees.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from msgspec import UNSET, Struct

from engine.compaction.errors import CompactionCancelled, CompactionError, busy, not_started
from engine.compaction.outcome import CompactOutcome
from engine.compaction.prompt import checkpoint_text, clean_summary
from engine.compaction.selection import Span, checked, span_problem
from engine.errors import TroveError
from engine.events import (
    Checkpoint,
    CompactEnd,
    CompactStart,
    CompactSummary,
    SeqSpan,
    UserMessage,
    usage_as_sent,
)
from engine.log import LogWriteError, SessionLog
from engine.surface import Entry, Surface
from engine.util.offload import run_drained

Stability = Literal["span", "surface"]
Summarize = Callable[[list[Entry]], Awaitable[Any]]
Capture = Callable[[int, list[Entry]], Awaitable[dict[str, Any]]]


class InvalidRangeError(TroveError, ValueError):
    """An explicit range that is not a compactable span; nothing was written."""


class Region(Struct, frozen=True):
    """The three parameters that distinguish the entry points."""

    owner: int | None
    stability: Stability
    flush: bool
    open_turn: bool = False
    """The span includes the open turn's own prompt (it alone exceeds the window)."""


async def run_region(
    log: SessionLog,
    surface: Surface,
    span: Span,
    region: Region,
    *,
    summarize: Summarize,
    capture: Capture | None = None,
) -> CompactOutcome:
    # 1. The range must be compactable now; the tail says whether the lock is free.
    problem = span_problem(surface, span)
    if problem is not None:
        raise InvalidRangeError(problem)
    span = checked(surface, span)
    # 2. A start with no end after the newest end-seed is a live lock.
    held = log.tail.open_compact
    if held is not None:
        raise busy(f"compaction started at log seq {held.seq} has not ended")
    # 3. Take the lock: from here on every failure makes one close attempt.
    try:
        start = log.append(
            CompactStart(
                turn=region.owner,
                range=SeqSpan(span.first, span.last, span.count),
                tokens=span.tokens,
                stability=region.stability,
                open_turn=region.open_turn,
            )
        )
    except LogWriteError as exc:
        raise not_started(exc.reason) from exc
    entries = span.entries(surface)
    version = surface.version
    error: CompactionError | None = None
    cancelled: asyncio.CancelledError | None = None
    checkpoint: UserMessage | None = None
    try:
        # 4. The expensive part, visible in the log while it runs.
        completion = await summarize(entries)
        summary = clean_summary(completion.content)
        if not summary:
            raise CompactionError("summary", "the model returned an empty summary")
        # The seqs the summary lists, gathered off the loop: `entries` is ours alone.
        replaced = await run_drained(_seqs, entries)
        # 5. Only what this region promised to keep still must be unchanged.
        if region.stability == "span":
            problem = span_problem(surface, span)
        else:
            problem = None if surface.version == version else "the conversation changed"
        if problem is not None:
            raise CompactionError("changed", problem)
        # 6. Commit: the summary, then the checkpoint that takes the span's place.
        checkpoint = _commit(log, surface, start.seq, span, replaced, summary, completion)
    except asyncio.CancelledError as exc:
        cancelled = exc
        error = CompactionError("summary", f"cancelled: {_reason(exc)}")
    except CompactionError as exc:
        error = exc
    except Exception as exc:  # whatever the summarizer raised, the bracket still closes
        error = CompactionError("summary", f"{type(exc).__name__}: {exc}")
    # The archive write follows a committed checkpoint even through a
    # cancellation: the originals have left the surface, and a cancel cannot
    # undo that, so they are stored (or the failure recorded) before closing.
    archive: dict[str, Any] | None = None
    archive_error: str | None = None
    if checkpoint is not None and capture is not None:
        archive, archive_error, late = await _capture_through_cancel(capture, start.seq, entries)
        cancelled = cancelled or late
    # 7. Exactly one close attempt, success or not.
    end = CompactEnd(
        start=start.seq,
        turn=region.owner,
        error=None if error is None else error.kind,
        message=None if error is None else str(error),
        cancelled=None if cancelled is None else _reason(cancelled),
        archive=UNSET if archive is None else archive,
        archive_error=archive_error if archive is None else None,
    )
    closed = True
    try:
        log.append(end)
    except LogWriteError as exc:
        # The start stays unmatched on purpose: it keeps blocking, and no flush.
        closed = False
        if error is None:
            error = CompactionError(
                "persistence",
                f"the end marker could not be written: {exc.reason}",
                state="applied",
                lock_held=True,
            )
        else:
            error = error.with_lock_held()
    # 8. Durability for the caller that asked for it, closed attempts only.
    if closed and region.flush:
        try:
            await run_drained(log.flush)
        except asyncio.CancelledError as exc:  # the fsync itself was drained
            cancelled = cancelled or exc
        except OSError as exc:
            if error is None:
                error = CompactionError("persistence", f"fsync failed: {exc}")
    replaced_count = len(entries)
    handed = [entries]
    del entries  # the worker's `handed.clear()` then drops the last reference the loop had
    _free_off_loop(handed)
    outcome = None
    if checkpoint is not None:
        outcome = CompactOutcome(
            start=start.seq,
            checkpoint=checkpoint.seq,
            replaced=replaced_count,
            tokens_before=span.tokens,
            tokens_after=_tokens_of(surface, checkpoint, span.index),
            archive=archive,
        )
    if cancelled is not None:
        if outcome is not None:
            raise CompactionCancelled(_reason(cancelled), outcome)
        raise cancelled
    if error is not None:
        raise error
    assert outcome is not None
    return outcome


def _free_off_loop(handed: list[list[Entry]]) -> None:
    """Let a worker thread drop the span's entries.

    After a commit the transaction's list holds the last references to the
    replaced entries, and freeing tens of thousands of objects is milliseconds
    the UI loop need not spend. `handed` is the only reference left to that
    list; emptying it in a worker frees the list and its entries there (or
    nothing, if a summarizer kept the list: it is never altered). Nothing
    waits for it, and emptying a list cannot fail.
    """
    try:
        asyncio.get_running_loop().run_in_executor(None, handed.clear)
    except RuntimeError:  # the executor is shut down: the loop frees them after all
        handed.clear()


def _seqs(entries: list[Entry]) -> list[int]:
    return [entry.seq for entry in entries]


def _commit(
    log: SessionLog,
    surface: Surface,
    start: int,
    span: Span,
    replaced: list[int],
    summary: str,
    completion: Any,
) -> UserMessage:
    """Step 6. The checkpoint's append is the one switch: before it, the surface is
    as it was (a summary line alone replaces nothing); after it, it uses the summary."""
    try:
        summary_event = log.append(
            CompactSummary(
                start=start,
                summary=summary,
                raw=completion.content,
                usage=usage_as_sent(completion.usage),
                model=completion.model,
                span=SeqSpan(span.first, span.last, span.count),
                replaced=replaced,
                tokens=span.tokens,
            )
        )
        if surface.reshapes == span.reshapes:
            # Not reshaped since step 1: the span is exactly these entries at its index.
            surface.vouch(summary_event.seq, span.index, span.count, span.tokens)
        text = checkpoint_text(summary, len(replaced))
        mark = Checkpoint(
            summary=summary_event.seq,
            start=start,
            first=span.first,
            last=span.last,
            count=len(replaced),
        )
        return log.append(UserMessage(text=text, checkpoint=mark))
    except LogWriteError as exc:
        raise CompactionError("commit", exc.reason, state="log") from exc
    except Exception as exc:  # written, but the surface could not follow it
        raise CompactionError("commit", f"{type(exc).__name__}: {exc}", state="partial") from exc


async def _capture_through_cancel(
    capture: Capture, key: int, entries: list[Entry]
) -> tuple[dict[str, Any] | None, str | None, asyncio.CancelledError | None]:
    """Run the capture to its end; a cancellation meanwhile is handed back, not obeyed."""
    task = asyncio.ensure_future(capture(key, entries))
    late: asyncio.CancelledError | None = None
    while True:
        try:
            return await asyncio.shield(task), None, late
        except asyncio.CancelledError as exc:
            if task.done():
                return None, "the archive write was cancelled", late or exc
            late = late or exc
        except Exception as exc:
            return None, f"{type(exc).__name__}: {exc}", late


def _reason(exc: BaseException) -> str:
    return str(exc.args[0]) if exc.args else "cancelled"


def _tokens_of(surface: Surface, event: UserMessage, index: int) -> int:
    entries = surface.entries
    if index < len(entries) and entries[index].seq == event.seq:
        return entries[index].tokens  # where the span stood: the usual case, no search
    return next((e.tokens for e in entries if e.seq == event.seq), 0)
