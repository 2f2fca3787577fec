"""A /retry, an /edit and an undone retry on a long thread change only its tail.

The rewind each writes runs on the UI loop; folding the new line again from its start
would read the whole thread there (from the file, for a thread opened from its resume
index). Each takes back the last exchange and puts on what the new line has instead
(engine.log.change), so no older event is read from the file and the surface is not
rebuilt; what the model is sent is still what a replay of the new line gives.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import parse_config
from engine.log import SessionLog
from engine.runtime import Runtime
from engine.runtime.commands_replies import retry_after
from engine.runtime.rewind import last_point, resend
from engine.surface import Surface
from engine.threads.thread import Thread
from tests.support import LIMIT, chat_messages, client_for, opened

TURNS = 1000
"""Exchanges in the thread: many times the events an open holds from the end."""


def _chat(log: SessionLog, turns: int) -> None:
    for turn in range(1, turns + 1):
        text = f"prompt {turn} " + "x" * 100
        item = log.append(ev.InboxQueued(text=text, waking=True)).seq
        log.append(ev.TurnStart(turn=turn, items=(item,)))
        log.append(ev.UserMessage(text=text, item_id=item))
        log.append(ev.AssistantMessage(content=f"reply {turn} " + "y" * 300, tool_calls=()))
        log.append(ev.TurnEnd(turn=turn, status="ok"))


async def _long_thread(tmp_path: Path, server: ScriptedServer, *, indexed: bool) -> Runtime:
    """A thread of `TURNS` exchanges, opened as a user reopens it: from its resume index
    (written as it was last quit), or cold, in one pass (engine.log.cold), which holds
    its surface as the index would."""
    config = parse_config(
        {
            "model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0},
            "compaction": {"auto": False},
        },
        source="test",
        env={},
    )
    home = tmp_path / "home"
    thread = Thread.create(home, "local", "long")
    _chat(thread.log, TURNS)
    thread.close()
    if indexed:
        first = Runtime.open(config, home, thread_id="long", model=client_for(server))
        await first.aclose()
    runtime = opened(Runtime.open(config, home, thread_id="long", model=client_for(server)))
    assert runtime.thread.log.kept_events  # a cold open keeps its surface as the index does
    return runtime


def _reads(runtime: Runtime) -> int:
    stored = runtime.thread.log.stored()
    return 0 if stored is None else stored.reads


async def _idle(runtime: Runtime) -> None:
    await asyncio.wait_for(runtime.driver.when_idle(), LIMIT)


def _as_replayed(runtime: Runtime) -> None:
    """The surface the driver holds is the one a replay of the line builds."""
    fresh = Surface.from_events(runtime.thread.log.events)
    surface = runtime.driver.surface
    assert surface.entries == fresh.entries
    assert (surface.tokens, surface.newest, surface._turn) == (
        fresh.tokens,
        fresh.newest,
        fresh._turn,
    )


@pytest.mark.parametrize("indexed", [True, False])
async def test_a_retry_on_a_long_thread_reads_only_its_tail(
    tmp_path: Path, server: ScriptedServer, indexed: bool
) -> None:
    runtime = await _long_thread(tmp_path, server, indexed=indexed)
    log, driver = runtime.thread.log, runtime.driver
    entries = driver.surface._entries
    reads = _reads(runtime)
    server.script(s.text("a new answer"))
    assert driver.regenerate(retry_after(log)) is not None  # what /retry runs on the loop
    assert _reads(runtime) == reads  # nothing older than the last exchange was read
    assert driver.surface._entries is entries  # changed in place, not rebuilt
    await _idle(runtime)
    sent = chat_messages(server.requests[-1])
    assert len(sent) == 2 * TURNS - 1 and sent[-1]["content"].startswith(f"prompt {TURNS} ")
    assert sent[-2]["content"].startswith(f"reply {TURNS - 1} ")
    _as_replayed(runtime)


@pytest.mark.parametrize("indexed", [True, False])
async def test_an_edit_and_an_undone_retry_read_only_the_tail(
    tmp_path: Path, server: ScriptedServer, indexed: bool
) -> None:
    runtime = await _long_thread(tmp_path, server, indexed=indexed)
    log, driver = runtime.thread.log, runtime.driver
    await driver.surface.loaded()  # the first request read the kept surface (off the loop)
    reads = _reads(runtime)
    entries = driver.surface._entries
    point = last_point(log)
    assert point is not None
    server.script(s.text("the edited answer"), s.text("never", hold=True))
    resend(driver, log, point.turn, "the last prompt, edited")  # one line: /edit sent
    assert _reads(runtime) == reads
    assert driver.surface._entries is entries
    await _idle(runtime)
    _as_replayed(runtime)
    assert driver.regenerate(retry_after(log)) is not None
    await server.wait_requests(2)
    reads = _reads(runtime)
    await driver.stop_turn()  # cancelled: the retry is undone, the edited answer back
    assert _reads(runtime) == reads
    server.release()
    said = [e.message.get("content") for e in driver.surface.entries[-2:]]
    assert said == ["the last prompt, edited", "the edited answer"]
    _as_replayed(runtime)
