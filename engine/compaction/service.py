"""The entry points into the region transaction: manual, pressure, overflow, range.

They differ only in the Region they pass (owner, stability, flush) and in
how they pick a span; the lock, the ordering and the failure handling all
live in `run_region`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from itertools import islice
from typing import Any

from engine.compaction.errors import CompactionError, busy
from engine.compaction.outcome import CompactOutcome
from engine.compaction.prompt import summary_request_offloaded
from engine.compaction.selection import (
    Span,
    View,
    offloaded,
    open_turn_start,
    range_span,
    select_offloaded,
    select_range,
)
from engine.compaction.transaction import (
    InvalidRangeError,
    Region,
    run_region,
)
from engine.config import CompactionConfig
from engine.driver import TurnAgent
from engine.model import ModelError
from engine.surface import Entry

__all__ = ["CompactOutcome", "CompactService", "InvalidRangeError"]

Capture = Callable[[int, list[Entry]], Awaitable[dict[str, Any]]]


class CompactService:
    """Compaction for one driver's thread; also the driver's TurnHooks."""

    def __init__(
        self,
        model: Any,
        config: CompactionConfig,
        *,
        context_window: int,
        capture: Capture | None = None,
    ) -> None:
        self.model = model
        self.config = config
        self.context_window = context_window
        self.capture = capture
        self.last_error: CompactionError | None = None
        self._manual_running = False
        """This process's /compact holds turn admission. Not a lock (admission and the
        bracket are those): only what a refused /compact says is busy."""

    async def _summarize(self, entries: list[Entry]) -> Any:
        try:
            request = await summary_request_offloaded(entries)
            return await self.model.complete(request, model=self.config.model)
        except ModelError as exc:
            raise CompactionError("summary", str(exc)) from exc

    async def _run(self, agent: TurnAgent, span: Span, region: Region) -> CompactOutcome:
        return await run_region(
            agent.log,
            agent.surface,
            span,
            region,
            summarize=self._summarize,
            capture=self.capture,
        )

    # -- manual ---------------------------------------------------------------

    async def compact_now(self, agent: TurnAgent) -> CompactOutcome | None:
        """/compact: between turns, without spending a model turn.

        Admission is reserved first, so a prompt sent meanwhile queues with
        its id and runs after the flush. None: nothing worth compacting,
        and nothing was written.
        """
        release = agent.reserve_turn_admission()
        if release is None:
            raise busy(self._refusal(agent))
        self._manual_running = True
        try:
            await agent.surface.loaded()
            span = await select_offloaded(agent.surface, self.config.keep_recent_tokens)
            if span is None:
                return None
            return await self._run(agent, span, Region(None, "span", flush=True))
        finally:
            self._manual_running = False
            release()

    def _refusal(self, agent: TurnAgent) -> str:
        """Why admission was refused: a compaction holds it (a live bracket, or this
        process's /compact before its bracket opens), or a turn or queued prompt does."""
        if agent.log.tail.open_compact is not None or self._manual_running:
            return "a compaction is already running"
        return "a turn is running or a queued prompt is about to start"

    # -- explicit range -----------------------------------------------------

    async def compact_range(
        self,
        agent: TurnAgent,
        first_seq: int,
        last_seq: int,
        *,
        flush: bool = False,
    ) -> CompactOutcome:
        """Compact the surface entries between two log seqs, whole-surface stable.

        The bracket's owner is the open turn, if one is open, else none (`turn:
        null`): a turn that has ended owns nothing that starts after it.
        """
        await agent.surface.loaded()
        span = range_span(agent.surface, first_seq, last_seq)
        if span is None:
            raise InvalidRangeError(f"no messages between seq {first_seq} and {last_seq}")
        open_turn = agent.log.tail.open_turn
        owner = open_turn.turn if open_turn is not None else None
        return await self._run(agent, span, Region(owner, "surface", flush))

    # -- automatic: TurnHooks -------------------------------------------------

    def _pressure(self, agent: TurnAgent) -> bool:
        used = agent.surface.tokens
        return used > self.config.threshold * self.context_window

    def _automatic_span(self, surface: View, *, turn: int) -> tuple[Span | None, bool]:
        """What pressure and overflow may summarize: never the question being answered.

        The open turn's prompt and its steering stay on the surface, unless
        they alone exceed the context window; only then is the turn itself
        summarized, and the bracket says so (`open_turn: true`). Passes over the
        whole thread: a worker runs it, on a view of the surface.
        """
        start = open_turn_start(surface, turn)
        span = select_range(surface, self.config.keep_recent_tokens, before=start)
        if span is not None or start is None:
            return span, False
        own = sum(entry.tokens for entry in islice(surface.entries, start, surface.count))
        if own <= self.context_window:
            return None, False
        return select_range(surface, self.config.keep_recent_tokens), True

    async def _automatic(self, agent: TurnAgent, turn: int) -> bool:
        span, open_turn = await offloaded(agent.surface, partial(self._automatic_span, turn=turn))
        if span is None:
            return False
        try:
            await self._run(agent, span, Region(turn, "surface", flush=False, open_turn=open_turn))
        except CompactionError as exc:
            # The turn goes on with the surface it has; the log has the attempt.
            self.last_error = exc
            return False
        return True

    async def before_request(self, driver: TurnAgent, turn: int) -> None:
        if self.config.auto and self._pressure(driver):
            await self._automatic(driver, turn)

    async def on_overflow(self, driver: TurnAgent, turn: int) -> bool:
        return await self._automatic(driver, turn)
