"""The agent-loop rules of seed 003: admission, FIFO inbox, idle, cancel, teardown."""

from __future__ import annotations

import asyncio
import json

from devtools import scripted_server as s
from engine import events as ev
from engine.driver import DriverClosedError
from engine.log import SessionLog
from engine.model.tools import ToolBox
from tests.support import echo_tool, first_delta, kinds, make_driver, of_kind


async def _settled(driver) -> None:
    await asyncio.wait_for(driver.when_idle(), 5)


async def test_one_turn_is_logged_in_order(tmp_path, server):
    server.script(s.text("hi there"))
    d = make_driver(tmp_path, server)
    d.send("hello")
    await _settled(d)
    assert kinds(d.log.events) == [
        ev.InboxQueued,
        ev.TurnStart,
        ev.UserMessage,
        ev.AssistantMessage,
        ev.TurnEnd,
    ]
    reply = of_kind(d.log.events, ev.AssistantMessage)[0]
    assert reply.content == "hi there"
    assert reply.usage.completion_tokens > 0
    assert of_kind(d.log.events, ev.TurnEnd)[0].status == "ok"
    await d.aclose()


async def test_same_tick_waking_send_owns_the_next_turn(tmp_path, server):
    d = make_driver(tmp_path, server)
    d.send("first")
    # The claim is only scheduled (call_soon): no turn has started, the driver
    # looks idle, yet the accepted waking send already has right of way.
    assert ev.TurnStart not in kinds(d.log.events)
    assert d.running_turn is None
    assert d.reserve_turn_admission() is None
    await _settled(d)
    release = d.reserve_turn_admission()
    assert release is not None
    release()
    await d.aclose()


async def test_reservation_refused_while_turn_runs_or_reserved(tmp_path, server):
    server.script(s.text("slow", hold="before"))
    d = make_driver(tmp_path, server)
    d.send("q")
    await server.wait_requests(1)
    assert d.running_turn == 1
    assert d.reserve_turn_admission() is None
    server.release()
    await _settled(d)
    release = d.reserve_turn_admission()
    assert release is not None
    assert d.reserve_turn_admission() is None
    release()
    await d.aclose()


async def test_ids_and_fifo_are_preserved_across_a_reservation(tmp_path, server):
    d = make_driver(tmp_path, server)
    release = d.reserve_turn_admission()
    assert release is not None
    a = d.send("alpha")
    b = d.send("beta")
    await asyncio.sleep(0)  # let any (wrongly) scheduled claim run
    assert ev.TurnStart not in kinds(d.log.events)
    assert [item.id for item in d.inbox] == [a, b]
    release()
    await _settled(d)
    starts = of_kind(d.log.events, ev.TurnStart)
    assert [s_.items for s_ in starts] == [(a,), (b,)]
    prompts = of_kind(d.log.events, ev.UserMessage)
    assert [(m.item_id, m.text) for m in prompts] == [(a, "alpha"), (b, "beta")]
    assert [t.turn for t in starts] == [1, 2]
    await d.aclose()


async def test_next_step_during_reservation_becomes_a_follow_up(tmp_path, server):
    d = make_driver(tmp_path, server)
    release = d.reserve_turn_admission()
    assert release is not None
    assert not d.accepts_next_step
    item = d.send("steer me", placement="next-step")
    assert [i.id for i in d.inbox] == [item]
    release()
    await _settled(d)
    start = of_kind(d.log.events, ev.TurnStart)[0]
    assert start.items == (item,)
    await d.aclose()


async def test_quiet_work_waits_for_a_waking_send(tmp_path, server):
    d = make_driver(tmp_path, server)
    quiet = d.send("context only", waking=False)
    await _settled(d)  # quiet work is not unfinished activity
    await asyncio.sleep(0)
    assert ev.TurnStart not in kinds(d.log.events)
    assert d.reserve_turn_admission() is not None  # and it does not own the next turn
    # (the reservation above is released by teardown; use a fresh driver state)
    d2 = make_driver(tmp_path / "b", server)
    q = d2.send("background", waking=False)
    w = d2.send("now answer")
    await _settled(d2)
    start = of_kind(d2.log.events, ev.TurnStart)[0]
    assert start.items == (q, w)
    assert [m.text for m in of_kind(d2.log.events, ev.UserMessage)] == [
        "background",
        "now answer",
    ]
    assert quiet in [i.id for i in d.inbox]
    await d.aclose()
    await d2.aclose()


async def test_release_is_idempotent_and_rearms_the_driver(tmp_path, server):
    d = make_driver(tmp_path, server)
    first = d.reserve_turn_admission()
    assert first is not None
    d.send("queued while reserved")
    first()
    first()  # second call is a no-op
    await _settled(d)
    assert len(of_kind(d.log.events, ev.TurnStart)) == 1
    second = d.reserve_turn_admission()
    assert second is not None
    first()  # a stale release must not free a newer reservation
    assert d.reserved
    assert d.reserve_turn_admission() is None
    second()
    assert not d.reserved
    await d.aclose()


async def test_when_idle_counts_a_reservation_as_activity(tmp_path, server):
    d = make_driver(tmp_path, server)
    release = d.reserve_turn_admission()
    waiter = asyncio.ensure_future(d.when_idle())
    await asyncio.sleep(0)
    assert not waiter.done()
    release()
    await asyncio.wait_for(waiter, 5)
    await d.aclose()


async def test_when_idle_waits_for_the_waking_item_a_reservation_held(tmp_path, server):
    server.script(s.text("answer", hold="before"))
    d = make_driver(tmp_path, server)
    release = d.reserve_turn_admission()
    d.send("held")
    waiter = asyncio.ensure_future(d.when_idle())
    release()
    await server.wait_requests(1)
    assert not waiter.done()  # the turn the reservation held is still running
    server.release()
    await asyncio.wait_for(waiter, 5)
    assert of_kind(d.log.events, ev.TurnEnd)[0].status == "ok"
    await d.aclose()


async def test_inject_is_immediate_and_never_wakes(tmp_path, server):
    d = make_driver(tmp_path, server)
    release = d.reserve_turn_admission()
    seq = d.inject("plugin context")
    assert d.log.events[-1].seq == seq
    assert d.log.events[-1].source == "inject"
    release()
    await _settled(d)
    await asyncio.sleep(0)
    assert ev.TurnStart not in kinds(d.log.events)
    assert d.surface.messages()[-1] == {"role": "user", "content": "plugin context"}
    await d.aclose()


async def test_cancel_keeps_partial_reply_and_prompt(tmp_path, server):
    server.script(s.text("partial answer that never finishes", hold=True))
    d = make_driver(tmp_path, server)
    d.send("tell me")
    await server.wait_requests(1)
    await first_delta(d)  # the first chunk has arrived
    assert d.cancel()
    await _settled(d)
    server.release()
    reply = of_kind(d.log.events, ev.AssistantMessage)[0]
    assert reply.cancelled is True
    assert reply.content and "partial answer".startswith(reply.content[:4])
    assert of_kind(d.log.events, ev.TurnEnd)[0].status == "cancelled"
    assert of_kind(d.log.events, ev.UserMessage)[0].text == "tell me"
    assert not d.cancel()  # nothing left to cancel
    await d.aclose()


async def test_cancel_runs_the_queue_on(tmp_path, server):
    server.script(s.text("x", hold="before"), s.text("second answer"))
    d = make_driver(tmp_path, server)
    d.send("one")
    d.send("two")
    await server.wait_requests(1)
    d.cancel()
    await _settled(d)
    server.release()
    ends = of_kind(d.log.events, ev.TurnEnd)
    assert [e.status for e in ends] == ["cancelled", "ok"]
    await d.aclose()


async def test_teardown_drains_own_activity_not_the_reservation(tmp_path, server):
    d = make_driver(tmp_path, server)
    release = d.reserve_turn_admission()
    assert release is not None
    await asyncio.wait_for(d.aclose(), 5)  # does not wait for the holder
    release()  # a late release after teardown is harmless
    try:
        d.send("after close")
    except DriverClosedError:
        pass
    else:
        raise AssertionError("send after teardown must be refused")


async def test_teardown_cancels_and_drains_a_running_turn(tmp_path, server):
    server.script(s.text("never", hold="before"))
    d = make_driver(tmp_path, server)
    d.send("q")
    await server.wait_requests(1)
    await asyncio.wait_for(d.aclose(), 5)
    server.release()
    assert isinstance(d.log.events[-1], ev.TurnEnd)
    assert d.log.events[-1].status == "cancelled"


async def test_tool_round_trip_and_steering(tmp_path, server):
    server.script(
        s.tool_calls([("echo", {"text": "ping"})]),
        s.text("done", hold="before"),
        s.text("steered reply"),
    )
    d = make_driver(tmp_path, server, tools=ToolBox([echo_tool()]))
    d.send("use the tool")
    await server.wait_requests(2)
    assert d.accepts_next_step
    steer = d.send("also mention pong", placement="next-step")
    server.release()
    await _settled(d)
    assert kinds(d.log.events, ev.TurnStart, ev.TurnEnd) == [ev.TurnStart, ev.TurnEnd]
    result = of_kind(d.log.events, ev.ToolResult)[0]
    assert json.loads(result.content) == {"echo": "ping"}
    steered = [m for m in of_kind(d.log.events, ev.UserMessage) if m.item_id == steer]
    assert steered and steered[0].placement == "next-step"
    # The steering message reached the model in a request of the same turn.
    last = server.requests[-1]["messages"]
    assert last[-1] == {"role": "user", "content": "also mention pong"}
    assert server.requests[0]["tools"][0]["function"]["name"] == "echo"
    await d.aclose()


async def test_malformed_tool_arguments_get_a_json_error(tmp_path, server):
    server.script(s.tool_calls([("echo", "{not json")]), s.text("ok"))
    d = make_driver(tmp_path, server, tools=ToolBox([echo_tool()]))
    d.send("go")
    await _settled(d)
    result = json.loads(of_kind(d.log.events, ev.ToolResult)[0].content)
    assert result["status"] == "error" and result["error"] == "invalid_arguments"
    assert of_kind(d.log.events, ev.TurnEnd)[0].status == "ok"
    await d.aclose()


async def test_model_error_ends_turn_with_one_line_and_keeps_prompt(tmp_path, server):
    server.script(s.error(401, "bad key"))
    d = make_driver(tmp_path, server)
    d.send("are you there")
    await _settled(d)
    end = of_kind(d.log.events, ev.TurnEnd)[0]
    assert end.status == "error" and "\n" not in end.error and "401" in end.error
    assert of_kind(d.log.events, ev.UserMessage)[0].text == "are you there"
    await d.aclose()


async def test_undelivered_input_survives_a_crash_quietly(tmp_path, server):
    d = make_driver(tmp_path, server)
    release = d.reserve_turn_admission()
    a = d.send("typed before the crash")
    d.log.close()  # the process dies here: no turn ran
    release = None  # noqa: F841
    log = SessionLog.open(tmp_path / "session.jsonl")
    from engine.driver import Driver
    from tests.support import client_for, opened

    d2 = opened(Driver(log, client_for(server)))
    assert [(i.id, i.text, i.waking) for i in d2.inbox] == [(a, "typed before the crash", False)]
    await d2.aclose()


async def test_input_left_queued_runs_one_turn_each_before_the_next_prompt(tmp_path, server):
    """Prompts still queued when the process ended come back quiet (the user decides),
    and once a prompt is sent they run first, each as its own turn, in order: not
    merged into the new prompt's turn."""
    d = make_driver(tmp_path, server)
    release = d.reserve_turn_admission()
    a = d.send("left one")
    b = d.send("left two")
    d.log.close()  # the process ends with both queued
    release = None  # noqa: F841
    from engine.driver import Driver
    from tests.support import client_for, opened

    d2 = opened(Driver(SessionLog.open(tmp_path / "session.jsonl"), client_for(server)))
    assert [i.id for i in d2.inbox] == [a, b]
    await _settled(d2)
    assert ev.TurnStart not in kinds(d2.log.events)  # not run on their own
    c = d2.send("new prompt")
    await _settled(d2)
    starts = of_kind(d2.log.events, ev.TurnStart)
    assert [start.items for start in starts] == [(a,), (b,), (c,)]
    assert [m.text for m in of_kind(d2.log.events, ev.UserMessage)] == [
        "left one",
        "left two",
        "new prompt",
    ]
    assert len(server.requests) == 3 and d2.inbox == []
    await d2.aclose()


async def test_a_turn_cancelled_before_it_started_gives_its_prompt_back(tmp_path, server):
    """The claim created the turn's task but the loop has not run it yet: cancelling it
    then must not lose the prompts it took from the queue, nor leave the driver busy."""
    server.script(s.text("the answer"))
    d = make_driver(tmp_path, server)
    item = d.send("asked, then cancelled at once")
    await asyncio.sleep(0)  # one step of the loop: the claim ran, the turn has not
    assert d.running_turn is None and not d.inbox  # taken by a turn not yet started
    assert d.cancel()
    await _settled(d)
    assert [(i.id, i.text, i.waking) for i in d.inbox] == [
        (item, "asked, then cancelled at once", False)
    ]
    assert ev.TurnStart not in kinds(d.log.events)
    d.send("and now")  # the prompt given back runs first, with the next one
    await _settled(d)
    assert [m.text for m in of_kind(d.log.events, ev.UserMessage)] == [
        "asked, then cancelled at once",
        "and now",
    ]


async def test_cancel_while_the_claim_is_scheduled_stops_the_turn_before_it_starts(
    tmp_path, server
):
    d = make_driver(tmp_path, server)
    item = d.send("sent, then Esc in the same tick")
    assert d.cancel()
    await _settled(d)
    assert [(i.id, i.waking) for i in d.inbox] == [(item, False)]
    assert len(server.requests) == 0


async def test_an_extension_is_asked_anew_for_every_request(tmp_path, server):
    # What a layer above adds (engine.driver.Extension) may be built after the driver:
    # each request offers its tools and instructions as they are then, and its calls run.
    class Late:
        def __init__(self) -> None:
            self.ready = False

        def tools(self):
            return [echo_tool()] if self.ready else []

        def instructions(self) -> str:
            return "use echo" if self.ready else ""

        async def amend(self, messages):
            return [*messages, {"role": "user", "content": "amended"}] if self.ready else messages

    late = Late()
    server.script(s.text("first"), s.tool_calls([("echo", {"text": "x"})]), s.text("done"))
    d = make_driver(tmp_path, server, system_prompt="sys", extension=late)
    d.send("one")
    await _settled(d)
    late.ready = True
    d.send("two")
    await _settled(d)
    first, second = server.requests[0], server.requests[1]
    assert "tools" not in first and first["messages"][0]["content"] == "sys"
    assert [t["function"]["name"] for t in second["tools"]] == ["echo"]
    assert second["messages"][0]["content"] == "sys\n\nuse echo"
    assert second["messages"][-1] == {"role": "user", "content": "amended"}
    (result,) = of_kind(d.log.events, ev.ToolResult)
    assert json.loads(result.content) == {"echo": "x"}
    await d.aclose()
