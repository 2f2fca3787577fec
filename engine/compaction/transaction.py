"""The one region transaction every compaction entry point runs.

Its ordering is the contract (seed 003, "One parameterized transaction"):
1. validate the selected positional range and inspect the durable tail;
2. reject a live unmatched compaction marker;
3. append compact/start synchronously;
4. prepare and await summarization;
5. revalidate the required stability;
6. append compact/summary and the replacement user/message;
7. make exactly one compact/end attempt;
8. flush when the caller asked for durability.
There is no other lock: steps 1-3 run without yielding to the event loop,
so the appended start is what any later entry point sees.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from engine import log as k
from engine.compaction.errors import CompactionError, busy
from engine.compaction.prompt import checkpoint_text, clean_summary
from engine.compaction.selection import Span, span_problem
from engine.log import SessionLog
from engine.offload import run_drained
from engine.surface import Entry, Surface

Stability = Literal["span", "surface"]
Summarize = Callable[[list[Entry]], Awaitable[Any]]
Capture = Callable[[int, list[Entry]], Awaitable[dict[str, Any]]]


class InvalidRangeError(ValueError):
    """An explicit range that is not a compactable span; nothing was written."""


@dataclass(frozen=True)
class Region:
    """The three parameters that distinguish the entry points."""

    owner: int | None
    stability: Stability
    flush: bool


@dataclass(frozen=True)
class CompactOutcome:
    start: int
    checkpoint: int
    replaced: int
    tokens_before: int
    tokens_after: int
    archive: dict[str, Any] | None

    def describe(self) -> str:
        text = (
            f"Compacted {self.replaced} messages "
            f"(≈{self.tokens_before:,} → ≈{self.tokens_after:,} tokens)."
        )
        if self.archive and "batch" in self.archive:
            text += f" The originals are archived as batch {self.archive['batch']}."
        elif self.archive:
            text += " The archive could not store the originals (history unavailable)."
        return text


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
    # 2. A start with no end after the newest end-seed is a live lock.
    held = log.tail.open_compact
    if held is not None:
        raise busy(f"compaction started at log seq {held['seq']} has not ended")
    # 3. Take the lock: from here on every failure makes one close attempt.
    start = log.append(
        k.COMPACT_START,
        turn=region.owner,
        range={"first": span.first, "last": span.last},
        seqs=list(span.seqs),
        tokens=span.tokens,
        stability=region.stability,
    )
    wanted = set(span.seqs)
    entries = [entry for entry in surface.entries if entry.seq in wanted]
    version = surface.version
    error: CompactionError | None = None
    cancelled: asyncio.CancelledError | None = None
    outcome: CompactOutcome | None = None
    archive: dict[str, Any] | None = None
    try:
        # 4. The expensive part, visible in the log while it runs.
        completion = await summarize(entries)
        summary = clean_summary(completion.content)
        if not summary:
            raise CompactionError("summary", "the model returned an empty summary")
        # 5. Only what this region promised to keep still must be unchanged.
        if region.stability == "span":
            problem = span_problem(surface, span)
        else:
            problem = None if surface.version == version else "the conversation changed"
        if problem is not None:
            raise CompactionError("changed", problem)
        # 6. Commit: the summary, then the checkpoint that takes the span's place.
        try:
            summary_event = log.append(
                k.COMPACT_SUMMARY,
                start=start["seq"],
                summary=summary,
                raw=completion.content,
                usage=completion.usage,
                model=completion.model,
                span={"first": span.first, "last": span.last},
                replaced=list(span.seqs),
                tokens=span.tokens,
            )
            text = checkpoint_text(summary, len(entries))
            checkpoint = log.append(
                k.USER_MESSAGE,
                text=text,
                checkpoint={
                    "summary": summary_event["seq"],
                    "start": start["seq"],
                    "first": span.first,
                    "last": span.last,
                    "count": len(entries),
                },
            )
        except OSError as exc:
            raise CompactionError("commit", str(exc)) from exc
        if capture is not None:
            archive = await capture(start["seq"], entries)
        outcome = CompactOutcome(
            start=start["seq"],
            checkpoint=checkpoint["seq"],
            replaced=len(entries),
            tokens_before=span.tokens,
            tokens_after=_tokens_of(surface, checkpoint),
            archive=archive,
        )
    except asyncio.CancelledError as exc:
        cancelled = exc
        if outcome is None:
            reason = str(exc.args[0]) if exc.args else "cancelled"
            error = CompactionError("summary", f"cancelled: {reason}")
    except CompactionError as exc:
        error = exc
    # 7. Exactly one close attempt, success or not.
    fields: dict[str, Any] = {"start": start["seq"], "turn": region.owner}
    if error is not None:
        fields.update(error=error.kind, message=str(error))
    if cancelled is not None:
        fields["cancelled"] = str(cancelled.args[0]) if cancelled.args else "cancelled"
    if archive is not None:
        fields["archive"] = archive
    closed = True
    try:
        log.append(k.COMPACT_END, **fields)
    except OSError as exc:
        # The start stays unmatched on purpose: it keeps blocking, and no flush.
        closed = False
        if error is None:
            error = CompactionError("persistence", f"the end marker could not be written: {exc}")
    # 8. Durability for the caller that asked for it, closed attempts only.
    if closed and region.flush:
        try:
            await run_drained(log.flush)
        except OSError as exc:
            if error is None:
                error = CompactionError("persistence", f"fsync failed: {exc}")
    if cancelled is not None:
        raise cancelled
    if error is not None:
        raise error
    assert outcome is not None
    return outcome


def _tokens_of(surface: Surface, event: dict[str, Any]) -> int:
    return next((e.tokens for e in surface.entries if e.seq == event["seq"]), 0)
