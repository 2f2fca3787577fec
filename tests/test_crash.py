"""SIGKILL after each step of the compaction transaction: nothing typed is lost."""

from __future__ import annotations

import asyncio

import pytest

from engine import events as ev
from engine.config import load_config
from engine.runtime import Runtime
from engine.threads.thread import Thread
from tests.crash_child import TYPED_DURING
from tests.support import client_for, killed_child, of_kind, opened

STEPS = [
    "1-reserved",
    "2-before-start",
    "3-started",
    "4-summarized",
    "5-validated",
    "6-summary",
    "6-checkpoint",
    "7-closed",
    "8-flushed",
]


@pytest.mark.parametrize("step", STEPS)
async def test_killed_during_compaction_loses_nothing(tmp_path, server, step):
    config_path = tmp_path / "config.yaml"
    config_path.write_text(
        f"model:\n  base_url: {server.base_url}\n  api_key: k\n  max_retries: 0\n"
        "compaction:\n  keep_recent_tokens: 0\n"
    )
    Thread.create(tmp_path, "local", "crash").close()
    await killed_child("tests.crash_child", tmp_path, config_path, "crash", step)

    config = load_config(config_path, home=tmp_path)
    rt = opened(Runtime.open(config, tmp_path, thread_id="crash", model=client_for(server)))
    log = rt.thread.log
    assert log.tail.open_compact is None  # a crash's bracket is stale after the end-seed
    said = [e.text for e in of_kind(log.events, ev.UserMessage) if e.item_id is not None]
    waiting = [item.text for item in rt.driver.inbox]
    assert said[:2] == ["one", "two"]
    assert said[2:] + waiting == [TYPED_DURING]  # delivered or restored, exactly once
    # The thread is usable: a new prompt runs (with any restored input) ...
    rt.driver.send("after restart")
    await asyncio.wait_for(rt.driver.when_idle(), 10)
    assert of_kind(log.events, ev.TurnEnd)[-1].status == "ok"
    assert not rt.driver.inbox
    # ... and /compact is not wedged by the killed attempt.
    result = await rt.commands.run("/compact")
    assert result.ok, result.text
    await rt.aclose()
