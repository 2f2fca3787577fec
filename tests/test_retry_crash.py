"""SIGKILL at each step of a /retry: the thread reopens with the earlier reply or the new
one, never neither, and goes on from it."""

from __future__ import annotations

import asyncio

import pytest

from devtools import scripted_server as s
from engine import events as ev
from engine.config import load_config
from engine.runtime import Runtime
from engine.threads.thread import Thread
from tests.support import chat_messages, client_for, killed_child, of_kind, opened

OLD = ["one", "answer one", "two", "answer two"]
NEW = ["one", "answer one", "two", "the new answer"]


@pytest.mark.parametrize(
    ("step", "retry", "expected"),
    [
        ("before", s.text("the new answer"), OLD),  # before the retry's rewind line
        ("after", s.text("the new answer"), OLD),  # that line on disk, no turn yet
        ("streaming", s.text("the new answer", hold=True), OLD),
        ("replied", s.text("the new answer"), OLD),  # the reply written, its turn open
        ("undoing", s.error(500, "broke"), OLD),  # failed, killed before its undo
        ("ended", s.text("the new answer"), NEW),  # its turn ended whole
    ],
)
async def test_killed_during_a_retry(tmp_path, server, step, retry, expected):
    config_path = tmp_path / "config.yaml"
    config_path.write_text(
        f"model:\n  base_url: {server.base_url}\n  api_key: k\n  max_retries: 0\n"
    )
    server.script(s.text("answer one"), s.text("answer two"), retry)
    Thread.create(tmp_path, "local", "crash").close()
    await killed_child("tests.retry_child", tmp_path, config_path, "crash", step)
    server.release()

    config = load_config(config_path, home=tmp_path)
    rt = opened(Runtime.open(config, tmp_path, thread_id="crash", model=client_for(server)))
    log = rt.thread.log
    said = [e.message.get("content") for e in rt.driver.surface.entries]
    assert said == expected
    on_line = [
        e.content if isinstance(e, ev.AssistantMessage) else e.text
        for e in log.events
        if isinstance(e, ev.AssistantMessage) or (isinstance(e, ev.UserMessage) and e.item_id)
    ]
    assert on_line == expected  # what the front ends draw, too
    assert rt.driver.inbox == []
    assert log.tail.open_turn is None
    # Opening it again changes nothing more: the undo was written once.
    rewinds = len(of_kind(log.file_events, ev.SessionRewind))
    thread_id = rt.thread.id
    await rt.aclose()
    rt = opened(Runtime.open(config, tmp_path, thread_id=thread_id, model=client_for(server)))
    assert len(of_kind(rt.thread.log.file_events, ev.SessionRewind)) == rewinds
    # The thread goes on from the reply it has.
    rt.driver.send("and three")
    await asyncio.wait_for(rt.driver.when_idle(), 30)
    entries = rt.driver.surface.entries
    assert [e.message.get("content") for e in entries[:-1]] == [*expected, "and three"]
    assert entries[-1].role == "assistant"
    sent = [m["content"] for m in chat_messages(server.requests[-1])]
    assert sent == [*expected, "and three"]
