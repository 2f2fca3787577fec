"""What the TUI shows when a stream fails mid-reply or a turn hits the tool-round limit."""

from __future__ import annotations

import dataclasses

from devtools import scripted_server as s
from engine import events as ev
from engine.model import ModelClient
from tests.support import chat_messages, of_kind, opened
from tests.tui.conftest import say, settle, type_text
from tui.widgets.assistant_message import AssistantMessage
from tui.widgets.chat_message import Notice, PastReply
from tui.widgets.prompt_input import PromptInput


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
        await app.chat.switch_thread(first)
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


def _users(request: dict) -> list[str]:
    return [m["content"] for m in chat_messages(request) if m["role"] == "user"]


async def test_a_prompt_sent_while_the_server_was_down_comes_back_once_and_is_sent_once(
    app_factory, server, refused_port
):
    """Issue 25 item 4: the server is down (nobody listens), so the turn fails before any
    reply: the prompt is back in the input, once; Enter with the server up again sends it,
    and the model has it once (it had it twice: the failed send stayed in its history)."""
    server.script(s.text("first answer"), s.text("the code is ZX-4471"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "hello")
        driver = app.runtime.driver
        up = driver.model
        driver.model = opened(
            ModelClient(
                base_url=f"http://127.0.0.1:{refused_port}/v1",
                api_key="k",
                model="scripted-model",
                max_retries=0,
            )
        )
        await say(pilot, "what is the code?")
        prompt = app.query_one(PromptInput)
        assert prompt.text == "what is the code?"
        (error,) = _errors(app)
        assert "cannot reach the model server" in error
        driver.model = up
        await pilot.press("enter")
        await settle(pilot)
        assert prompt.text == ""
        assert len(server.requests) == 2
        assert _users(server.requests[-1]) == ["hello", "what is the code?"]
        assert [r.text for r in app.query(AssistantMessage)][-1] == "the code is ZX-4471"


async def test_a_failed_prompt_comes_back_ahead_of_what_was_typed_meanwhile(app_factory, server):
    """Typed while the doomed request ran, the new text stays, after the prompt that
    came back; a reply the model gave before failing keeps its prompt (nothing back)."""
    down = dataclasses.replace(s.error(500, "the server is down"), hold="before")
    server.script(down, s.text("answered"), s.tool_calls([("echo", {})]), s.error(500, "down"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "first question")
        await pilot.press("enter")
        await server.wait_requests(1)
        await type_text(pilot, "and more")
        server.release()
        await settle(pilot)
        prompt = app.query_one(PromptInput)
        assert prompt.text == "first question\nand more"
        await pilot.press("enter")
        await settle(pilot)
        assert _users(server.requests[-1]) == ["first question\nand more"]
        # The model answered with a tool call, then the server failed: it stays, nothing back.
        await say(pilot, "search it")
        assert prompt.text == ""
        assert _users(server.requests[-1]) == ["first question\nand more", "search it"]
