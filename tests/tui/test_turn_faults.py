"""What the TUI shows when a stream fails mid-reply or a turn hits the tool-round limit."""

from __future__ import annotations

from engine import events as ev
from tests import scripted_server as s
from tests.support import of_kind
from tests.tui.conftest import say, settle
from tui.widgets.assistant_message import AssistantMessage
from tui.widgets.chat_message import Notice, PastReply


def _errors(app) -> list[str]:
    return [str(n.text) for n in app.query(Notice) if n.has_class("-error")]


async def test_a_reset_mid_reply_keeps_the_partial_reply_marked(app_factory, server):
    server.script(s.reset(after_chunks=2), s.text("the next answer"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "tell me")
        (reply,) = app.query(AssistantMessage)
        assert reply.text == "partial partial " and reply.has_class("-interrupted")
        (error,) = _errors(app)
        assert "mid-reply" in error and "the partial reply is kept" in error
        # The next reply gets a widget of its own, unmarked.
        await say(pilot, "again")
        replies = list(app.query(AssistantMessage))
        assert [r.text for r in replies] == ["partial partial ", "the next answer"]
        assert not replies[1].has_class("-interrupted")
        events = app.runtime.thread.log.events
        assert of_kind(events, ev.AssistantMessage)[0].interrupted is True


async def test_a_cut_off_reply_is_kept_marked_and_the_screen_says_it_was_cut_off(
    app_factory, server
):
    server.script(s.cutoff("The answer is forty-t"), s.text("the next answer"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "tell me")
        (reply,) = app.query(AssistantMessage)
        assert reply.text == "The answer is forty-t" and reply.has_class("-interrupted")
        (error,) = _errors(app)
        assert error.startswith("✗ reply cut off: the server closed the stream"), error
        assert server.base_url in error and error.endswith("the partial reply is kept")
        (end,) = of_kind(app.runtime.thread.log.events, ev.TurnEnd)
        assert end.status == "error" and end.reason == "cut_off"
        await say(pilot, "again")
        replies = list(app.query(AssistantMessage))
        assert [r.text for r in replies] == ["The answer is forty-t", "the next answer"]
        assert not replies[1].has_class("-interrupted")


async def test_a_reopened_thread_shows_the_partial_reply_marked(app_factory, server):
    server.script(s.malformed(after_chunks=1))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "tell me")
        first = app.runtime.thread.id
        await say(pilot, "/new")
        await settle(pilot)
        await app.switch_thread(first)
        await settle(pilot)
        (past,) = [p for p in app.query(PastReply) if p.text == "partial "]
        assert past.has_class("-interrupted")
        (error,) = _errors(app)
        assert "malformed" in error and "the partial reply is kept" in error


async def test_whitespace_before_a_failure_does_not_swallow_the_next_reply(app_factory, server):
    server.script(s.Reply(kind="reset", pieces=("\n",)), s.text("a whole answer"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "one")
        assert not app.query(AssistantMessage)  # nothing worth showing was said
        await say(pilot, "two")
        (reply,) = app.query(AssistantMessage)
        assert reply.text == "a whole answer" and not reply.has_class("-interrupted")


async def test_the_tool_round_limit_is_one_error_notice(app_factory, server):
    server.always(s.tool_calls([("history_search", {"query": "anything"})]))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        app.runtime.driver.max_tool_rounds = 2
        await say(pilot, "search forever")
        (error,) = _errors(app)
        assert "after 2 rounds of tool calls" in error and "model.max_tool_rounds" in error
        assert len(server.requests) == 3
        assert app.runtime.driver.running_turn is None
