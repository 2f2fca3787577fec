"""A child process that dies by SIGKILL at a chosen step of /compact.

Used by tests/test_crash.py: the parent restarts the thread afterwards and
checks that nothing the user typed was lost and the thread is usable.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from engine import events as ev
from engine.config import load_config
from engine.runtime import Runtime

TYPED_DURING = "typed during compaction"


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


async def main(home: Path, config_path: Path, thread_id: str, step: str) -> None:
    config = load_config(config_path, home=home)
    rt = Runtime.open(config, home, thread_id=thread_id)
    for prompt in ("one", "two"):
        rt.driver.send(prompt)
        await rt.driver.when_idle()
    log = rt.thread.log
    driver = rt.driver

    reserve = driver.reserve_turn_admission

    def reserve_and_type() -> Any:
        release = reserve()
        driver.send(TYPED_DURING)  # the user types while /compact runs
        if step == "1-reserved":
            die()
        return release

    driver.reserve_turn_admission = reserve_and_type  # type: ignore[method-assign]

    append = log.append

    def append_then_maybe_die(payload: Any) -> Any:
        if isinstance(payload, ev.CompactStart) and step == "2-before-start":
            die()
        if isinstance(payload, ev.CompactSummary) and step == "5-validated":
            die()
        event = append(payload)
        after: dict[type, str] = {
            ev.CompactStart: "3-started",
            ev.CompactSummary: "6-summary",
            ev.CompactEnd: "7-closed",
        }
        checkpoint = isinstance(event, ev.UserMessage) and event.checkpoint is not None
        if after.get(type(event)) == step or (step == "6-checkpoint" and checkpoint):
            die()
        return event

    log.append = append_then_maybe_die  # type: ignore[method-assign]

    complete = rt.model.complete

    async def complete_then_maybe_die(messages: Any, **kw: Any) -> Any:
        result = await complete(messages, **kw)
        if step == "4-summarized" and log.tail.open_compact is not None:
            die()
        return result

    rt.model.complete = complete_then_maybe_die  # type: ignore[method-assign]

    flush = log.flush

    def flush_then_maybe_die() -> None:
        flush()
        if step == "8-flushed":
            die()

    log.flush = flush_then_maybe_die  # type: ignore[method-assign]
    await rt.commands.run("/compact")
    await driver.when_idle()
    sys.exit(3)  # a step that never came is a test failure, not a pass


if __name__ == "__main__":
    home, config_path, thread_id, step = sys.argv[1:5]
    asyncio.run(main(Path(home), Path(config_path), thread_id, step))
