"""The longest stall of the running asyncio loop while a block of work runs.

A probe task sleeps 1 ms at a time on the same loop; how late it wakes is how
long a keystroke would have waited. Shared by the benchmarks that print a loop
stall beside the UI loop's 16 ms budget.
"""

from __future__ import annotations

import asyncio
import time
from types import TracebackType


class LoopStall:
    """`async with LoopStall() as stall: ...`, then `stall.worst` (seconds)."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._done = False
        self._task: asyncio.Task[None] | None = None

    async def _probe(self) -> None:
        while not self._done:
            asked = time.perf_counter()
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, time.perf_counter() - asked - 0.001)

    async def __aenter__(self) -> LoopStall:
        self._task = asyncio.create_task(self._probe())
        await asyncio.sleep(0.005)  # the probe is running before the work starts
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done = True
        if self._task is not None:
            await self._task
