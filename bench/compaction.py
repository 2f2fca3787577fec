"""Compaction transaction overhead without the model call (target ≤ 10 ms plus the flush).

Builds a thread with N exchanges, then runs the region transaction with an
instant summarizer, so what is timed is selection, the bracket, stability
checks, the commit and the surface update. The fsync is timed separately.
Run: python bench/compaction.py [exchanges]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from engine import events as ev
from engine.compaction import Region, run_region
from engine.compaction.selection import select_range
from engine.log import SessionLog
from engine.model import Completion
from engine.surface import Surface


def build(path: Path, exchanges: int) -> tuple[SessionLog, Surface]:
    log = SessionLog.open(path)
    surface = Surface.from_events(log.events)
    log.listeners.append(surface.apply)
    for turn in range(1, exchanges + 1):
        log.append(ev.TurnStart(turn=turn, items=[]))
        log.append(ev.UserMessage(text=f"question {turn} " * 20))
        log.append(ev.AssistantMessage(content=f"answer {turn} " * 60, tool_calls=[]))
        log.append(ev.TurnEnd(turn=turn, status="ok"))
    return log, surface


async def instant(entries: list) -> Completion:
    return Completion(content="summary " * 50, tool_calls=[], usage=None, finish_reason="stop")


async def measure(exchanges: int, rounds: int) -> None:
    times, flushes = [], []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            log, surface = build(Path(tmp) / "session.jsonl", exchanges)
            t0 = time.perf_counter()
            span = select_range(surface, keep_recent_tokens=2000)
            assert span is not None
            await run_region(log, surface, span, Region(None, "span", False), summarize=instant)
            times.append((time.perf_counter() - t0) * 1000)
            t1 = time.perf_counter()
            log.flush()
            flushes.append((time.perf_counter() - t1) * 1000)
            log.close()
    times.sort()
    p95 = times[int(0.95 * (len(times) - 1))]
    print(
        f"{exchanges:>6} exchanges: transaction median {statistics.median(times):.2f} ms, "
        f"p95 {p95:.2f} ms (target ≤ 10 ms); flush median {statistics.median(flushes):.2f} ms"
    )


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [100, 1000, 5000]
    for size in sizes:
        asyncio.run(measure(size, rounds=20 if size <= 1000 else 5))


if __name__ == "__main__":
    main()
