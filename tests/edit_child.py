"""A child process that dies by SIGKILL at one step of sending an `/edit`.

Used by tests/test_edit_crash.py: the parent reopens the thread and checks that
the edited text the user sent is there, queued or asked, never lost.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from engine import events as ev
from engine.config import load_config
from engine.runtime import Runtime
from engine.runtime.rewind import last_point, resend
from tests.crash_child import die

EDITED = "two, said better"


async def main(home: Path, config_path: Path, thread_id: str, step: str) -> None:
    config = load_config(config_path, home=home)
    rt = Runtime.open(config, home, thread_id=thread_id)
    for prompt in ("one", "two"):
        rt.driver.send(prompt)
        await rt.driver.when_idle()
    log = rt.thread.log
    append = log.append
    rewound = False

    def append_then_maybe_die(payload: Any) -> Any:
        nonlocal rewound
        if isinstance(payload, ev.SessionRewind) and step == "before":
            die()  # nothing of the edit written yet
        event = append(payload)
        if isinstance(payload, ev.SessionRewind):
            rewound = True
            if step == "rewound":
                die()  # the thread went back; whatever else the edit writes is not yet
        elif rewound and step == "next" and not isinstance(payload, ev.PromptDraft):
            die()  # the line after the rewind
        elif rewound and isinstance(payload, ev.UserMessage) and step == "asked":
            die()  # the edited prompt is in the conversation, not yet answered
        return event

    log.append = append_then_maybe_die  # type: ignore[method-assign]
    point = last_point(log)
    assert point is not None
    resend(rt.driver, log, point.turn, EDITED)
    if step == "flushed":
        die()  # the edit's lines are all written
    await rt.driver.when_idle()
    sys.exit(3)  # a step that never came is a test failure, not a pass


if __name__ == "__main__":
    home, config_path, thread_id, step = sys.argv[1:5]
    asyncio.run(main(Path(home), Path(config_path), thread_id, step))
