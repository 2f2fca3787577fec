"""A child process that dies by SIGKILL just before, or just after, a rewind's one line.

Used by tests/test_rewind_crash.py: the parent reopens the thread and checks
which line it is on: the old one (before) or the new one (after), never a mix.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from engine import events as ev
from engine.config import load_config
from engine.runtime import Runtime
from engine.runtime.rewind import choose, rewind
from tests.crash_child import die


async def main(home: Path, config_path: Path, thread_id: str, step: str) -> None:
    config = load_config(config_path, home=home)
    rt = Runtime.open(config, home, thread_id=thread_id)
    for prompt in ("one", "two", "three"):
        rt.driver.send(prompt)
        await rt.driver.when_idle()
    log = rt.thread.log
    append = log.append

    def append_then_maybe_die(payload: Any) -> Any:
        if isinstance(payload, ev.SessionRewind) and step == "before":
            die()
        return append(payload)

    log.append = append_then_maybe_die  # type: ignore[method-assign]
    flush = log.flush

    def flush_then_maybe_die() -> None:
        flush()
        if step == "after":
            die()

    log.flush = flush_then_maybe_die  # type: ignore[method-assign]
    rewind(rt.driver, log, choose(log, 2))  # back to just before "two"
    sys.exit(3)  # a step that never came is a test failure, not a pass


if __name__ == "__main__":
    home, config_path, thread_id, step = sys.argv[1:5]
    asyncio.run(main(Path(home), Path(config_path), thread_id, step))
