"""Compaction's cost to the UI loop, without the model call (target ≤ 10 ms in all).

Builds a thread with N exchanges, then runs the region transaction with an
instant summarizer and the app's own archive capture (`capture_hook` over a
real `ArchiveStore`), so what is timed is selection, the bracket, stability
checks, the commit, the surface update and the capture with its record
preparation. A probe task on the same loop wakes every millisecond; the
longest gap it sees beyond that is the longest stall a UI would feel. The
loop's work in all is the CPU time of the loop's thread meanwhile (worker
threads excluded), less the probe's own wake-ups (its wake-ups meanwhile times the
CPU a wake-up took over an idle 100 ms just before; printed too). The fsync is timed apart.
Run: python bench/compaction.py [exchanges ...] (from a git worktree: PYTHONPATH=.)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from engine import events as ev
from engine.compaction import Region, run_region
from engine.compaction.selection import select_range
from engine.config import TaskContinuityConfig
from engine.continuity.capture import capture_hook
from engine.continuity.context import ContinuityContext
from engine.continuity.store import ArchiveStore
from engine.log import SessionLog
from engine.model import Completion
from engine.surface import Entry, Surface

TARGET_MS = 10.0
TICK = 0.001


def build(path: Path, exchanges: int) -> tuple[SessionLog, Surface]:
    log = SessionLog.open(path)
    surface = Surface.from_events(log.events)
    log.projections.append(surface.apply)
    for turn in range(1, exchanges + 1):
        log.append(ev.TurnStart(turn=turn, items=[]))
        log.append(ev.UserMessage(text=f"question {turn} " * 20))
        log.append(ev.AssistantMessage(content=f"answer {turn} " * 60, tool_calls=[]))
        log.append(ev.TurnEnd(turn=turn, status="ok"))
    return log, surface


async def instant(entries: list[Entry]) -> Completion:
    return Completion(content="summary " * 50, tool_calls=[], usage=None, finish_reason="stop")


@dataclass
class Probe:
    """Wakes every TICK on the loop; lateness is time the loop spent elsewhere."""

    longest: float = 0.0
    ticks: int = 0
    running: bool = True

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while self.running:
            before = loop.time()
            await asyncio.sleep(TICK)
            lag = max(0.0, loop.time() - before - TICK)
            self.longest = max(self.longest, lag)
            self.ticks += 1


async def once(tmp: Path, exchanges: int) -> tuple[float, float, float, float, float]:
    log, surface = build(tmp / "session.jsonl", exchanges)
    store = ArchiveStore(tmp / "history.sqlite", TaskContinuityConfig())
    context = ContinuityContext.for_log(log, surface, store, user_id="u", thread_id="t")
    capture = capture_hook(context)
    probe = Probe()
    ticker = asyncio.create_task(probe.run())
    await asyncio.sleep(TICK * 3)  # the probe is running before the compaction starts
    idle_ticks, idle_cpu = probe.ticks, time.thread_time()
    await asyncio.sleep(0.1)  # what a wake-up of the probe alone costs the loop thread
    per_tick = (time.thread_time() - idle_cpu) / max(1, probe.ticks - idle_ticks)
    ticks = probe.ticks
    probe.longest = 0.0
    t0 = time.perf_counter()
    cpu0 = time.thread_time()
    span = select_range(surface, keep_recent_tokens=2000)
    assert span is not None
    outcome = await run_region(
        log, surface, span, Region(None, "span", False), summarize=instant, capture=capture
    )
    wall = time.perf_counter() - t0
    cpu = time.thread_time() - cpu0
    probe.running = False
    ticks_after = probe.ticks
    await ticker
    assert outcome.archive is not None and "batch" in outcome.archive, outcome.archive
    t1 = time.perf_counter()
    log.flush()
    flush = time.perf_counter() - t1
    store.close()
    log.close()
    probe_cost = per_tick * (ticks_after - ticks)
    return (
        wall * 1000,
        probe.longest * 1000,
        (cpu - probe_cost) * 1000,
        flush * 1000,
        probe_cost * 1000,
    )


async def measure(exchanges: int, rounds: int) -> None:
    walls: list[float] = []
    stalls: list[float] = []
    lates: list[float] = []
    flushes: list[float] = []
    probes: list[float] = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            wall, stall, late, flush, probe = await once(Path(tmp), exchanges)
        probes.append(probe)
        walls.append(wall)
        stalls.append(stall)
        lates.append(late)
        flushes.append(flush)
    stall = statistics.median(stalls)
    late = statistics.median(lates)
    verdict = "ok" if late <= TARGET_MS and stall <= TARGET_MS else "MISS"
    print(
        f"{exchanges:>6} exchanges ({4 * exchanges:,} events): "
        f"wall {statistics.median(walls):.1f} ms (capture included); "
        f"UI loop longest stall {stall:.1f} ms, work in all {late:.1f} ms "
        f"(probe's {statistics.median(probes):.1f} ms excluded) "
        f"(target ≤ {TARGET_MS:.0f} ms) {verdict}; flush {statistics.median(flushes):.1f} ms"
    )


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 5000, 10000]
    print(f"medians; load average {os.getloadavg()[0]:.2f}")
    for size in sizes:
        asyncio.run(measure(size, rounds=11 if size <= 1000 else 5))


if __name__ == "__main__":
    main()
