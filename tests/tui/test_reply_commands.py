"""Issue 28, point 3 in the app: /retry redraws the thread with the new reply, /edit puts
the last prompt in the box and Enter replaces the exchange, /copy copies a reply or a code
block as Ctrl+Y does, /system shows and sets the system prompt."""

from __future__ import annotations

from devtools import scripted_server as s
from engine import events as ev
from tests.support import chat_messages, of_kind
from tests.tui.conftest import say, settle, type_text, until
from tui.widgets.chat_message import Notice, PastReply
from tui.widgets.prompt_input import PromptInput


def _notices(app) -> str:
    return "\n".join(str(n.text) for n in app.screen.query(Notice))


def _replies(app) -> list[str]:
    return [reply.text for reply in app.screen.query(PastReply)]


async def test_retry_shows_the_new_reply_in_place_of_the_old(app_factory, server):
    server.script(s.text("first try"), s.text("second try"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "question")
        assert _replies(app) == ["first try"]
        await say(pilot, "/retry")
        assert _replies(app) == ["second try"]
        assert "earlier reply is kept as a branch" in _notices(app)
        assert [m["content"] for m in chat_messages(server.requests[-1])] == ["question"]


async def test_escape_during_a_retry_brings_the_earlier_reply_back(app_factory, server):
    server.script(s.text("first try"), s.text("a second try", hold=True))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "question")
        await type_text(pilot, "/retry")
        await pilot.press("enter")
        await server.wait_requests(2)
        await until(pilot, lambda: app.runtime.driver.partial_reply != "")
        await pilot.press("escape")
        await settle(pilot)
        server.release()
        assert _replies(app) == ["first try"]
        assert "the earlier reply is back" in _notices(app)


async def test_edit_puts_the_prompt_in_the_box_and_enter_replaces_the_exchange(app_factory, server):
    server.script(s.text("answer one"), s.text("answer two"), s.text("answer to the edit"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "one")
        await say(pilot, "two")
        prompt = app.query_one(PromptInput)
        await say(pilot, "/edit")
        assert prompt.text == "two" and prompt.editing_prompt is not None
        assert "Enter sends it in its place" in str(prompt.border_title)
        await type_text(pilot, " and more")
        await pilot.press("enter")
        await settle(pilot)
        assert _replies(app) == ["answer one", "answer to the edit"]
        assert prompt.editing_prompt is None and prompt.border_title is None
        sent = [m["content"] for m in chat_messages(server.requests[-1])]
        assert sent == ["one", "answer one", "two and more"]
        replaced = [e for e in app.runtime.thread.log.file_events if isinstance(e, ev.UserMessage)]
        assert [e.text for e in replaced] == ["one", "two", "two and more"]  # kept as a branch


async def test_ctrl_c_drops_an_edit_and_keeps_the_exchange(app_factory, server):
    server.script(s.text("answer one"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "one")
        await say(pilot, "/edit")
        prompt = app.query_one(PromptInput)
        assert prompt.text == "one"
        await pilot.press("ctrl+c")
        await settle(pilot)
        assert prompt.text == "" and prompt.editing_prompt is None
        assert not of_kind(app.runtime.thread.log.file_events, ev.SessionRewind)
        assert _replies(app) == ["answer one"]


async def test_copy_copies_a_reply_or_a_code_block(app_factory, server):
    server.script(s.text("older"), s.text("Here:\n\n```py\nprint(1)\n```\n\nand\n\n```\nls\n```\n"))
    app = app_factory()
    copied: list[str] = []
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "a")
        await say(pilot, "b")
        await say(pilot, "/copy code 1")
        await say(pilot, "/copy code")
        await say(pilot, "/copy 2")
        assert copied == ["print(1)", "ls", "older"]
        assert "code block 1 of the last reply" in _notices(app)
        await say(pilot, "/copy 5")
        assert "no reply 5 from the end" in _notices(app)


async def test_system_shows_and_sets_the_system_prompt(app_factory, server):
    server.script(s.text("arr"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "/system Talk like a pirate.")
        await say(pilot, "hello")
        assert server.requests[-1]["messages"][0]["content"].startswith("Talk like a pirate.")
        await say(pilot, "/system")
        assert "System prompt (this thread's" in _notices(app)
