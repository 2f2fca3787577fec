"""SIGKILL around a rewind's one line: the thread reopens on the old line or the new one."""

from __future__ import annotations

import asyncio

import pytest

from engine import events as ev
from engine.config import load_config
from engine.runtime import Runtime
from engine.threads.thread import Thread
from tests.support import client_for, killed_child, of_kind, opened


@pytest.mark.parametrize(
    ("step", "said"), [("before", ["one", "two", "three"]), ("after", ["one"])]
)
async def test_killed_around_a_rewind(tmp_path, server, step, said):
    config_path = tmp_path / "config.yaml"
    config_path.write_text(
        f"model:\n  base_url: {server.base_url}\n  api_key: k\n  max_retries: 0\n"
    )
    Thread.create(tmp_path, "local", "crash").close()
    await killed_child("tests.rewind_child", tmp_path, config_path, "crash", step)

    config = load_config(config_path, home=tmp_path)
    rt = opened(Runtime.open(config, tmp_path, thread_id="crash", model=client_for(server)))
    log = rt.thread.log
    prompts = [e.text for e in of_kind(log.events, ev.UserMessage) if e.item_id is not None]
    assert prompts == said
    assert len(of_kind(log.file_events, ev.SessionRewind)) == (step == "after")
    assert [e.message["content"] for e in rt.driver.surface.entries if e.role == "user"] == said
    assert rt.driver.inbox == []  # nothing comes back queued, whichever line
    # The thread goes on along that line.
    rt.driver.send("four")
    await asyncio.wait_for(rt.driver.when_idle(), 30)
    prompts = [e.text for e in of_kind(log.events, ev.UserMessage) if e.item_id is not None]
    assert prompts == [*said, "four"]
    await rt.aclose()
