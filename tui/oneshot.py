"""`trove -p "question"`: one turn, the answer on stdout, then exit."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.backend import Backend
from engine.config import Config
from engine.runtime import Runtime
from tui.printer import StreamPrinter


async def _oneshot(
    config: Config, home: Path, prompt: str, thread_id: str | None, backend: Backend | None = None
) -> int:
    printer = StreamPrinter()
    runtime = Runtime.open(config, home, thread_id=thread_id, backend=backend)
    printer.attach(runtime)
    try:
        runtime.driver.send(prompt)
        await runtime.driver.when_idle()
    finally:
        await runtime.aclose()
    return 1 if printer.errors else 0


def run_oneshot(
    config: Config,
    home: Path,
    prompt: str,
    *,
    thread_id: str | None = None,
    backend: Backend | None = None,
) -> int:
    return asyncio.run(_oneshot(config, home, prompt, thread_id, backend))
