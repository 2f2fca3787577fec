"""Editing and removing queued prompts (issue 25 item 3): an item being edited is held
out of the queue, a removed item can be put back, and both hold across a reopen."""

from __future__ import annotations

import asyncio

from devtools import scripted_server as s
from engine import events as ev
from engine.driver import Driver
from engine.log import SessionLog
from tests.support import client_for, make_driver, of_kind, opened


async def _settled(driver: Driver) -> None:
    await asyncio.wait_for(driver.when_idle(), 5)


async def test_a_held_item_and_those_behind_it_wait_for_the_edit(tmp_path, server):
    server.script(s.text("first", hold="before"))
    d = make_driver(tmp_path, server)
    d.send("running")
    await server.wait_requests(1)
    old = d.send("old text")
    later = d.send("behind it")
    assert d.hold(old) is not None
    server.release()
    await _settled(d)  # the queue waits at the held item: the driver is idle
    assert [(i.id, i.held) for i in d.inbox] == [(old, True), (later, False)]
    assert len(server.requests) == 1
    assert d.edit(old, "new text")
    await _settled(d)
    starts = of_kind(d.log.events, ev.TurnStart)
    assert [start.items for start in starts][1:] == [(old,), (later,)]
    texts = [m.text for m in of_kind(d.log.events, ev.UserMessage)]
    assert texts == ["running", "new text", "behind it"]
    assert "old text" not in str(server.requests[-1]["messages"])


async def test_a_dropped_edit_lets_the_queue_run_the_item_as_it_was(tmp_path, server):
    server.script(s.text("first", hold="before"))
    d = make_driver(tmp_path, server)
    d.send("running")
    await server.wait_requests(1)
    item = d.send("queued")
    d.hold(item)
    server.release()
    await _settled(d)
    assert len(server.requests) == 1
    d.release(item)
    await _settled(d)
    assert [m.text for m in of_kind(d.log.events, ev.UserMessage)] == ["running", "queued"]


async def test_a_held_steer_is_not_delivered_and_does_not_loop_the_turn(tmp_path, server):
    server.script(s.text("one", hold="before"), s.text("two"))
    d = make_driver(tmp_path, server)
    d.send("running")
    await server.wait_requests(1)
    steer = d.send("steer me", placement="next-step")
    d.hold(steer)
    server.release()
    await _settled(d)
    assert len(server.requests) == 1  # the turn ended; the held steer waits
    assert [i.id for i in d.inbox] == [steer]
    d.edit(steer, "steered")
    await _settled(d)
    assert [m.text for m in of_kind(d.log.events, ev.UserMessage)] == ["running", "steered"]


async def test_edit_of_an_item_already_taken_says_so(tmp_path, server):
    d = make_driver(tmp_path, server)
    item = d.send("gone")
    await _settled(d)
    assert d.hold(item) is None
    assert d.edit(item, "too late") is False


async def test_a_removed_item_comes_back_in_its_place(tmp_path, server):
    server.script(s.text("first", hold="before"))
    d = make_driver(tmp_path, server)
    d.send("running")
    await server.wait_requests(1)
    a, b, c = d.send("a"), d.send("b"), d.send("c")
    removed = d.remove(b)
    assert removed is not None and removed.text == "b"
    assert [i.id for i in d.inbox] == [a, c]
    assert d.restore(b)
    assert [i.id for i in d.inbox] == [a, b, c]
    assert not d.restore(b)  # once
    server.release()
    await _settled(d)
    texts = [m.text for m in of_kind(d.log.events, ev.UserMessage)]
    assert texts == ["running", "a", "b", "c"]


async def test_a_restored_item_is_queued_after_a_reopen(tmp_path, server):
    d = make_driver(tmp_path, server)
    release = d.reserve_turn_admission()
    a, b = d.send("kept"), d.send("removed, then put back")
    d.remove(b)
    d.restore(b)
    d.remove(a)
    d.log.close()  # the process ends here
    assert release is not None
    d2 = opened(Driver(SessionLog.open(tmp_path / "session.jsonl"), client_for(server)))
    assert [(i.id, i.text) for i in d2.inbox] == [(b, "removed, then put back")]
    assert of_kind(d2.log.events, ev.InboxRestored)[0].item_id == b
