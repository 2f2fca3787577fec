"""The engine → front end port: typed notifications, in order, each listener isolated."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import parse_config
from engine.port import Failure, LogAppended, Notification, Port, ReplyDelta, StateChanged
from engine.runtime import Runtime
from tests.support import client_for, of_kind


def _runtime(tmp_path: Path, server: ScriptedServer) -> Runtime:
    config = parse_config(
        {"model": {"base_url": server.base_url, "api_key": "k", "name": "scripted-model"}},
        source="test",
        env={},
    )
    return Runtime.open(config, tmp_path, model=client_for(server))


async def test_a_subscriber_hears_the_turn_in_order(tmp_path: Path, server: ScriptedServer) -> None:
    server.script(s.text("Hello there, friend.", chunk_chars=5))
    rt = _runtime(tmp_path, server)
    heard: list[Notification] = []
    rt.subscribe(heard.append)
    try:
        rt.driver.send("hi")
        await rt.driver.when_idle()
    finally:
        await rt.aclose()
    logged = [type(n.event) for n in heard if isinstance(n, LogAppended)]
    assert logged[:4] == [ev.InboxQueued, ev.TurnStart, ev.UserMessage, ev.AssistantMessage]
    assert logged[-1] is ev.TurnEnd
    assert "".join(n.text for n in heard if isinstance(n, ReplyDelta)) == "Hello there, friend."
    states = [n.state for n in heard if isinstance(n, StateChanged)]
    assert [q.text for q in states[0].queue] == ["hi"]  # the send, before its turn
    assert any(state.running_turn == 1 for state in states)
    assert states[-1].running_turn is None and not states[-1].queue
    # Every delta comes before the reply's event.
    reply = next(
        i
        for i, n in enumerate(heard)
        if isinstance(n, LogAppended) and isinstance(n.event, ev.AssistantMessage)
    )
    assert all(i < reply for i, n in enumerate(heard) if isinstance(n, ReplyDelta))


async def test_a_raising_listener_does_not_break_a_turn(
    tmp_path: Path, server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(s.text("The answer is 42."))
    rt = _runtime(tmp_path, server)
    reported: list[tuple[str, str]] = []
    heard: list[Notification] = []

    def broken(notification: Notification) -> None:
        raise RuntimeError("widget bug")

    rt.subscribe(broken, on_error=lambda _, n, exc: reported.append((type(n).__name__, str(exc))))
    unlogged = rt.subscribe(broken)  # no hook of its own: the logger hears of it
    rt.subscribe(heard.append)  # a listener after the broken ones still hears everything
    start = rt.thread.log.next_seq
    try:
        with caplog.at_level(logging.WARNING, logger="trove"):
            rt.driver.send("what is the answer?")
            await rt.driver.when_idle()
    finally:
        await rt.aclose()
    events = rt.thread.log.events
    assert [e.status for e in of_kind(events, ev.TurnEnd)] == ["ok"]
    assert [e.content for e in of_kind(events, ev.AssistantMessage)] == ["The answer is 42."]
    assert ("LogAppended", "widget bug") in reported and ("ReplyDelta", "widget bug") in reported
    assert "widget bug" in caplog.text
    assert [n.event.seq for n in heard if isinstance(n, LogAppended)] == [
        e.seq for e in events if e.seq >= start
    ]
    unlogged()
    unlogged()  # idempotent


def test_unsubscribe_stops_delivery_and_a_failing_hook_is_contained() -> None:
    port = Port(on_error=lambda *_: (_ for _ in ()).throw(RuntimeError("hook bug")))
    heard: list[Notification] = []
    stop = port.subscribe(heard.append)

    def broken(notification: Notification) -> None:
        raise ValueError("boom")

    port.subscribe(broken)
    port.publish(Failure("disk full"))  # neither the listener nor the hook raises out
    stop()
    port.publish(Failure("again"))
    assert heard == [Failure("disk full")]
