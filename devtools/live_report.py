"""What the live check records: one prompt's turn from the log, and the report of
every check, which starts failed and is proven true."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from engine import events as ev
from engine.events import LogEvent
from engine.runtime import Runtime

E = TypeVar("E", bound=LogEvent)

CHECKS = (
    "planted",
    "compacted",
    "summary_omits_codes",
    "resumed",
    "context_hides_codes",
    "history_search",
    "history_read",
    "cited_note",
    "manifest",
)


@dataclass
class Report:
    """Everything the output file records; checks start failed and are proven true."""

    codes: list[str]
    checks: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(CHECKS, False))
    details: dict[str, str] = field(default_factory=dict)
    planted_replies: list[str] = field(default_factory=list)
    summary: str | None = None
    answer: str | None = None
    notes: dict[str, Any] | None = None
    thread_id: str | None = None
    transcript: list[LogEvent] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks[name] = ok
        if detail:
            self.details[name] = detail
        return ok

    @property
    def passed(self) -> bool:
        return self.error is None and all(self.checks.values())

    @contextlib.contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[phase] = round(time.perf_counter() - started, 3)


class StopCheck(Exception):
    """A stage failed so that later stages would test nothing; its check says why."""


@dataclass(frozen=True)
class TurnLog:
    """The log events one prompt produced, from its inbox entry to its turn's end."""

    events: list[LogEvent]
    timed_out: bool

    def of_kind(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def status(self) -> str:
        if self.timed_out:
            return "timed out"
        ends = self.of_kind(ev.TurnEnd)
        if not ends:
            return "did not end"
        end = ends[-1]
        return str(end.status) + (f" ({end.error})" if end.error else "")

    @property
    def final_text(self) -> str | None:
        """The last assistant message that asked for no tool: the answer."""
        for event in reversed(self.of_kind(ev.AssistantMessage)):
            if not event.tool_calls and not event.cancelled:
                return event.content or ""
        return None

    def tool_results(self, name: str) -> list[dict[str, Any]]:
        """Parsed results of one tool; unparseable content counts as an error result."""
        out = []
        for event in self.of_kind(ev.ToolResult):
            if event.name != name:
                continue
            try:
                parsed = json.loads(event.content)
            except json.JSONDecodeError:
                parsed = None
            out.append(parsed if isinstance(parsed, dict) else {"status": "error"})
        return out


async def run_turn(runtime: Runtime, text: str, timeout: float) -> TurnLog:
    """Send one prompt and wait for the driver to go idle, cancelling after `timeout`.

    A real model can loop on tool calls or stall; the timeout bounds the run
    and the cancelled turn still closes its bracket in the log.
    """
    queued = runtime.driver.send(text)
    timed_out = False
    try:
        await asyncio.wait_for(runtime.driver.when_idle(), timeout)
    except TimeoutError:
        timed_out = True
        runtime.driver.cancel()
        await runtime.driver.when_idle()
    return TurnLog([e for e in runtime.thread.log.events if e.seq > queued], timed_out)
