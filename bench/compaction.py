"""Compaction's cost to the UI loop, without the model call.

Two figures, each judged: the loop's work in all (target ≤ 10 ms, the issue's
row) and its longest stall (target ≤ 16 ms, one frame at 60 fps, as
bench/archive.py judges the capture's stall).

Builds a thread with N exchanges, then runs the region transaction with an
instant summarizer and the app's own archive capture (`capture_hook` over a
real `ArchiveStore`), so what is timed is selection, the bracket, stability
checks, the commit, the surface update and the capture with its record
preparation, with the summary request built as the service builds it. A
probe task on the same loop wakes every millisecond; the longest gap it sees
beyond that is the longest stall a UI would feel. The loop's work in all is
the CPU time of the loop's thread (worker threads excluded) in rounds run
without the probe, alternating with the probed ones: a wake-up of the probe
costs far more while a worker holds the GIL than when idle, so subtracting
an idle estimate left most of the probe's cost in the figure. The part of
that work spent collecting garbage (gc.callbacks) is printed too. The fsync
is timed apart.
Run: python bench/compaction.py [exchanges ...] (from a git worktree: PYTHONPATH=.)
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from engine import events as ev
from engine.compaction import Region, run_region
from engine.compaction.prompt import summary_request_offloaded
from engine.compaction.selection import select_offloaded
from engine.config import TaskContinuityConfig
from engine.continuity.archive.store import ArchiveStore
from engine.continuity.capture import capture_hook
from engine.continuity.context import ContinuityContext
from engine.log import SessionLog
from engine.model import Completion
from engine.surface import Entry, Surface

TARGET_MS = 10.0
"""The UI loop's work in all per compaction."""
TARGET_STALL_MS = 16.0
"""The UI loop's longest stall during a compaction: one frame at 60 fps."""
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
    """The service's summarizer less the model call: the request is built as the app does."""
    await summary_request_offloaded(entries)
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


class LoopGC:
    """CPU time the loop's thread spends in the cyclic collector (gc.callbacks)."""

    def __init__(self) -> None:
        self.loop_thread = threading.get_ident()
        self.spent = 0.0
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if threading.get_ident() != self.loop_thread:
            return
        if phase == "start":
            self._began = time.thread_time()
        else:
            self.spent += time.thread_time() - self._began


@dataclass
class Round:
    wall: float
    cpu: float
    stall: float
    gc: float
    flush: float


async def once(tmp: Path, exchanges: int, *, probed: bool) -> Round:
    """One compaction of a fresh thread. With the probe: the longest stall. Without it:
    the loop thread's CPU time, which then is the compaction's alone (a probe's wake-ups
    cost more while a worker holds the GIL than when idle, so none is subtracted)."""
    log, surface = build(tmp / "session.jsonl", exchanges)
    store = ArchiveStore(tmp / "history.sqlite", TaskContinuityConfig())
    context = ContinuityContext.for_log(log, surface, store, user_id="u", thread_id="t")
    capture = capture_hook(context)
    probe = Probe()
    ticker = asyncio.create_task(probe.run()) if probed else None
    await asyncio.sleep(TICK * 3)  # the probe is running before the compaction starts
    probe.longest = 0.0
    collector = LoopGC()
    gc.callbacks.append(collector)
    t0 = time.perf_counter()
    cpu0 = time.thread_time()
    try:
        span = await select_offloaded(surface, keep_recent_tokens=2000)
        assert span is not None
        outcome = await run_region(
            log, surface, span, Region(None, "span", False), summarize=instant, capture=capture
        )
        wall = time.perf_counter() - t0
        cpu = time.thread_time() - cpu0
    finally:
        gc.callbacks.remove(collector)
    probe.running = False
    if ticker is not None:
        await ticker
    assert outcome.archive is not None and "batch" in outcome.archive, outcome.archive
    t1 = time.perf_counter()
    log.flush()
    flush = time.perf_counter() - t1
    store.close()
    log.close()
    ms = 1000
    return Round(wall * ms, cpu * ms, probe.longest * ms, collector.spent * ms, flush * ms)


async def measure(exchanges: int, rounds: int) -> None:
    probed: list[Round] = []
    quiet: list[Round] = []
    for _ in range(rounds):
        for runs, with_probe in ((quiet, False), (probed, True)):
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(await once(Path(tmp), exchanges, probed=with_probe))
    stall = statistics.median(r.stall for r in probed)
    work = statistics.median(r.cpu for r in quiet)
    print(
        f"{exchanges:>6} exchanges ({4 * exchanges:,} events): "
        f"wall {statistics.median(r.wall for r in quiet):.1f} ms (capture included); "
        f"flush {statistics.median(r.flush for r in quiet):.1f} ms"
    )
    print(
        f"{exchanges:>6} exchanges: UI loop work in all {work:.1f} ms "
        f"(of it collecting garbage {statistics.median(r.gc for r in quiet):.1f} ms) "
        f"(target ≤ {TARGET_MS:.0f} ms) {'ok' if work <= TARGET_MS else 'MISS'}"
    )
    print(
        f"{exchanges:>6} exchanges: UI loop longest stall {stall:.1f} ms "
        f"(target ≤ {TARGET_STALL_MS:.0f} ms) {'ok' if stall <= TARGET_STALL_MS else 'MISS'}"
    )


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 5000, 10000]
    print(f"medians; load average {os.getloadavg()[0]:.2f}")
    for size in sizes:
        asyncio.run(measure(size, rounds=11 if size <= 1000 else 5))


if __name__ == "__main__":
    main()
