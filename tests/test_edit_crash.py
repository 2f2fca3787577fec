"""SIGKILL at each step of sending an `/edit`: the edited text the user sent is never lost.

Before the edit's first line nothing changed (the text was still only in the input);
from that line on, the thread is on the new line with the edited prompt in it, queued
(it comes back quietly, as any prompt queued before a crash) or asked.
"""

from __future__ import annotations

import asyncio

import pytest

from devtools import scripted_server as s
from engine import events as ev
from engine.config import load_config
from engine.runtime import Runtime
from engine.threads.thread import Thread
from tests.edit_child import EDITED
from tests.support import client_for, killed_child, of_kind, opened


def _prompts(log: object) -> list[str]:
    events = log.events  # type: ignore[attr-defined]
    return [e.text for e in of_kind(events, ev.UserMessage) if e.item_id is not None]


@pytest.mark.parametrize(
    ("step", "asked", "queued"),
    [
        ("before", ["one", "two"], []),  # nothing of the edit on disk: the old exchange
        ("rewound", ["one"], [EDITED]),  # the first line of the edit
        ("next", ["one"], [EDITED]),  # the line after it
        ("flushed", ["one"], [EDITED]),  # every line the edit writes, no turn yet
        ("asked", ["one", EDITED], []),  # the edited prompt asked, its reply not come
    ],
)
async def test_killed_while_an_edit_is_sent(tmp_path, server, step, asked, queued):
    config_path = tmp_path / "config.yaml"
    config_path.write_text(
        f"model:\n  base_url: {server.base_url}\n  api_key: k\n  max_retries: 0\n"
    )
    server.script(s.text("answer one"), s.text("answer two"), s.text("never", hold="before"))
    Thread.create(tmp_path, "local", "crash").close()
    await killed_child("tests.edit_child", tmp_path, config_path, "crash", step)
    server.release()

    config = load_config(config_path, home=tmp_path)
    rt = opened(Runtime.open(config, tmp_path, thread_id="crash", model=client_for(server)))
    log = rt.thread.log
    assert _prompts(log) == asked
    assert [item.text for item in rt.driver.inbox] == queued
    # The thread goes on: what is queued runs first, once, then the next prompt.
    rt.driver.send("three")
    await asyncio.wait_for(rt.driver.when_idle(), 30)
    assert _prompts(log) == [*asked, *queued, "three"]
    assert rt.driver.inbox == []
    await rt.aclose()
