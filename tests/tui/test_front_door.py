"""The front door (issue 25 items 1-3): what is typed or pasted reaches the prompt whatever
has focus, in order, and a queued prompt being edited is never sent with its old text."""

from __future__ import annotations

from textual import events

from devtools import scripted_server as s
from engine import events as ev
from tests.support import chat_messages, of_kind
from tests.tui.conftest import settle, type_text, until
from tui.widgets.prompt_input import PromptInput
from tui.widgets.status_strip import QueueList
from tui.widgets.transcript import Transcript


def _burst(app, text: str) -> None:
    """Keys as a terminal delivers a fast typist or an unbracketed paste: all of them in
    the app's queue before the first is handled (a pilot's press waits between keys)."""
    for ch in text:
        key = "space" if ch == " " else ch
        app.post_message(events.Key(key, ch))


def _notes(app) -> list[str]:
    return [n.message for n in app._notifications]


def _user_texts(app) -> list[str]:
    return [e.text for e in of_kind(app.runtime.thread.log.events, ev.UserMessage)]


async def _queue_behind_a_held_reply(app, pilot, server, *texts: str) -> None:
    await type_text(pilot, "first")
    await pilot.press("enter")
    await server.wait_requests(1)
    for text in texts:
        await type_text(pilot, text)
        await pilot.press("enter")
    await until(pilot, lambda: app.query_one(QueueList).option_count == len(texts))


async def test_a_burst_typed_on_the_transcript_reaches_the_prompt_whole(app_factory, server):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        app.query_one(Transcript).focus()
        await pilot.pause()
        _burst(app, "abc def")
        prompt = app.query_one(PromptInput)
        await until(pilot, lambda: prompt.text == "abc def")
        assert prompt.has_focus


async def test_a_paste_on_the_transcript_lands_in_the_prompt(app_factory, server):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        app.query_one(Transcript).focus()
        await pilot.pause()
        app.post_message(events.Paste("pasted\rtext"))
        prompt = app.query_one(PromptInput)
        await until(pilot, lambda: prompt.text == "pasted\ntext")
        assert prompt.has_focus


async def test_a_paste_with_cr_line_breaks_keeps_its_lines(app_factory, server):
    """tmux and many terminals send a paste's line breaks as CR (some as CRLF)."""
    server.script(s.text("ok"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        app.post_message(events.Paste("line one\rline two\r\nline three"))
        prompt = app.query_one(PromptInput)
        await until(pilot, lambda: prompt.text == "line one\nline two\nline three")
        await pilot.press("enter")
        await settle(pilot)
        sent = chat_messages(server.requests[-1])[-1]["content"]
        assert sent == "line one\nline two\nline three"


async def test_focus_returns_to_the_prompt_when_the_queue_empties(app_factory, server):
    server.script(s.text("slow", hold="before"), s.text("queued answer"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await _queue_behind_a_held_reply(app, pilot, server, "queued")
        app.query_one(QueueList).focus()
        await pilot.pause()
        server.release()
        await settle(pilot)
        assert app.query_one(PromptInput).has_focus
        _burst(app, "next")
        await until(pilot, lambda: app.query_one(PromptInput).text == "next")


async def test_ctrl_d_off_the_prompt_quits_when_the_prompt_is_empty(app_factory, server):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        app.query_one(Transcript).focus()
        await pilot.pause()
        await pilot.press("ctrl+d")
        await until(pilot, lambda: not app.is_running)


async def test_a_queued_prompt_being_edited_is_not_sent_with_its_old_text(app_factory, server):
    """The reported race: the queue took the original while 'Editing queued prompt' showed,
    then Enter sent the edit as a second prompt."""
    server.script(s.text("slow", hold="before"), s.text("edited answer"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "half typed")
        prompt = app.query_one(PromptInput)
        prompt.clear()
        await _queue_behind_a_held_reply(app, pilot, server, "old text")
        await type_text(pilot, "typed meanwhile")
        app.query_one(QueueList).focus()
        await pilot.press("e")
        await until(pilot, lambda: prompt.text == "old text")
        server.release()  # the running reply ends while the edit is open
        await settle(pilot)
        assert _user_texts(app) == ["first"]
        assert "[editing]" in str(app.query_one(QueueList).get_option_at_index(0).prompt)
        prompt.clear()
        await type_text(pilot, "new text")
        await pilot.press("enter")
        await settle(pilot)
        assert _user_texts(app) == ["first", "new text"]
        assert len(server.requests) == 2
        assert "old text" not in str(server.requests[-1]["messages"])
        assert prompt.text == "typed meanwhile"  # what was typed before the edit is back


async def test_queue_navigation_does_not_wrap(app_factory, server):
    server.script(s.text("slow", hold="before"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await _queue_behind_a_held_reply(app, pilot, server, "a", "b")
        queue = app.query_one(QueueList)
        queue.focus()
        await pilot.press("up")
        assert queue.highlighted == 0
        await pilot.press("down", "down", "down")
        assert queue.highlighted == 1
        server.release()
        await settle(pilot)


async def test_delete_names_what_it_removed_and_ctrl_z_puts_it_back(app_factory, server):
    server.script(s.text("slow", hold="before"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await _queue_behind_a_held_reply(app, pilot, server, "keep a", "drop b", "keep c")
        queue = app.query_one(QueueList)
        queue.focus()
        await pilot.press("down", "delete")
        await until(pilot, lambda: queue.option_count == 2)
        assert any("drop b" in note and "Ctrl+Z" in note for note in _notes(app))
        await pilot.press("ctrl+z")
        await until(pilot, lambda: queue.option_count == 3)
        assert [item.text for item in app.runtime.driver.inbox] == ["keep a", "drop b", "keep c"]
        # Only as the next key: after another key, Ctrl+Z does not touch the queue.
        await pilot.press("delete", "down", "ctrl+z")  # removes "drop b" again
        await pilot.pause()
        assert [item.text for item in app.runtime.driver.inbox] == ["keep a", "keep c"]
        server.release()
        await settle(pilot)
        assert _user_texts(app) == ["first", "keep a", "keep c"]
