"""A child process that dies by SIGKILL at one step of a /retry.

Used by tests/test_retry_crash.py: the parent reopens the thread and checks
that it has the earlier reply or the new one, never neither.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from engine import events as ev
from engine.config import load_config
from engine.runtime import Runtime
from tests.crash_child import die
from tests.support import first_delta


async def main(home: Path, config_path: Path, thread_id: str, step: str) -> None:
    config = load_config(config_path, home=home)
    rt = Runtime.open(config, home, thread_id=thread_id)
    for prompt in ("one", "two"):
        rt.driver.send(prompt)
        await rt.driver.when_idle()
    log = rt.thread.log
    append = log.append

    def append_then_maybe_die(payload: Any) -> Any:
        rewind = isinstance(payload, ev.SessionRewind)
        if rewind and payload.retry and step == "before":
            die()
        if rewind and payload.undoes is not None and step == "undoing":
            die()  # a failed retry, killed before its undo's line
        event = append(payload)
        if isinstance(payload, ev.AssistantMessage) and step == "replied":
            die()  # the new reply is written, its turn has not ended
        if isinstance(payload, ev.TurnEnd) and step == "ended":
            die()
        return event

    log.append = append_then_maybe_die  # type: ignore[method-assign]
    flush = log.flush

    def flush_then_maybe_die() -> None:
        flush()
        if step == "after":
            die()

    log.flush = flush_then_maybe_die  # type: ignore[method-assign]
    result = await rt.commands.run("/retry")
    if step == "streaming":
        await first_delta(rt.driver)
        die()
    await rt.driver.when_idle()
    print(result, file=sys.stderr)
    sys.exit(3)  # a step that never came is a test failure, not a pass


if __name__ == "__main__":
    home, config_path, thread_id, step = sys.argv[1:5]
    asyncio.run(main(Path(home), Path(config_path), thread_id, step))
