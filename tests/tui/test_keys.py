"""Keys as people know them from other terminal chat apps: steering that survives tmux,
Ctrl+C / Ctrl+D, /clear, Ctrl+Y from the prompt, and a help screen that lists them all."""

from __future__ import annotations

from devtools import scripted_server as s
from engine import events as ev
from tests.support import echo_tool, of_kind
from tests.tui.conftest import say, settle, type_text, until
from tui.widgets.chat_message import Notice
from tui.widgets.prompt_input import PromptInput
from tui.widgets.status_strip import QueueList


def _notices(app) -> list[str]:
    return [n.text for n in app.query(Notice)]


def _queue(app) -> list[str]:
    queue = app.query_one(QueueList)
    return [str(queue.get_option_at_index(i).prompt) for i in range(queue.option_count)]


async def _start_tool_turn(app, pilot, server) -> None:
    """A turn that ran a tool and now waits on its second request (held by the server)."""
    from engine.model.tools import ToolBox

    app.runtime.driver.tools = ToolBox([echo_tool()])
    await type_text(pilot, "start")
    await pilot.press("enter")
    await server.wait_requests(2)


def _steered(app) -> list[tuple[str, str | None]]:
    users = of_kind(app.runtime.thread.log.events, ev.UserMessage)
    return [(e.text, e.placement) for e in users if e.placement]


async def test_ctrl_s_steers_the_running_turn(app_factory, server):
    """tmux delivers Alt+Enter as a plain Enter and Ctrl+Enter not at all; Ctrl+S arrives."""
    server.script(
        s.tool_calls([("echo", {"text": "x"})]), s.text("done", hold="before"), s.text("ok")
    )
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await _start_tool_turn(app, pilot, server)
        await type_text(pilot, "steer this")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: bool(_queue(app)))
        assert _queue(app) == ["1. [steer] steer this"]
        server.release()
        await settle(pilot)
        assert _steered(app) == [("steer this", "next-step")]
        assert len(of_kind(app.runtime.thread.log.events, ev.TurnStart)) == 1


async def test_steer_command_steers_the_running_turn(app_factory, server):
    server.script(
        s.tool_calls([("echo", {"text": "x"})]), s.text("done", hold="before"), s.text("ok")
    )
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await _start_tool_turn(app, pilot, server)
        await type_text(pilot, "/steer mention pong")
        await pilot.press("enter")
        await until(pilot, lambda: bool(_queue(app)))
        assert _queue(app) == ["1. [steer] mention pong"]
        server.release()
        await settle(pilot)
        assert _steered(app) == [("mention pong", "next-step")]
        assert len(of_kind(app.runtime.thread.log.events, ev.TurnStart)) == 1
        # The steer reached the model inside the same turn, before its last request.
        last = server.requests[-1]["messages"]
        assert any(m.get("content") == "mention pong" for m in last)


async def test_steer_with_nothing_running_says_it_was_queued(app_factory, server):
    server.script(s.text("answer"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "/steer hello")
        texts = [e.text for e in of_kind(app.runtime.thread.log.events, ev.UserMessage)]
        assert texts == ["hello"]
        assert any("Nothing to steer" in text for text in _notices(app))


async def test_steer_command_needs_text(app_factory, server):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "/steer")
        assert any("/steer TEXT" in text for text in _notices(app))
        assert not of_kind(app.runtime.thread.log.events, ev.InboxQueued)


async def test_ctrl_c_cancels_the_running_reply(app_factory, server):
    """Not Textual's "press ctrl+q to quit" toast: the reply stops, as with Esc."""
    server.script(s.text("a long answer that is interrupted", hold=True))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "tell me")
        await pilot.press("enter")
        await server.wait_requests(1)
        await until(pilot, lambda: bool(app.runtime.driver.partial_reply))
        await type_text(pilot, "later")
        await pilot.press("enter")  # queued behind the reply: said once, with how to steer
        await until(pilot, lambda: any("Ctrl+S" in n.message for n in app._notifications))
        await pilot.press("ctrl+c")
        await settle(pilot)
        server.release()
        events = app.runtime.thread.log.events
        ends = of_kind(events, ev.TurnEnd)
        assert ends[0].status == "cancelled"
        assert any("cancelled" in text for text in _notices(app))
        assert not any("quit" in n.message for n in app._notifications)
        # The queued prompt was not dropped: it ran as its own turn.
        assert [e.text for e in of_kind(events, ev.UserMessage)] == ["tell me", "later"]
        assert app.is_running


async def test_ctrl_c_cancels_a_compaction(app_factory, server):
    server.script(s.text("one"), s.text("two"), s.text("never", hold="before"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "one")
        await say(pilot, "two")
        await type_text(pilot, "/compact")
        await pilot.press("enter")
        await server.wait_requests(3)
        await pilot.press("ctrl+c")
        await settle(pilot)
        server.release()
        end = of_kind(app.runtime.thread.log.events, ev.CompactEnd)[-1]
        assert end.cancelled
        assert any("nothing you typed was lost" in text for text in _notices(app))


async def test_ctrl_c_clears_the_draft_and_up_brings_it_back(app_factory, server):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "half a thought")
        await pilot.press("ctrl+c")
        await pilot.pause()
        prompt = app.query_one(PromptInput)
        assert prompt.text == ""
        assert app.is_running
        await pilot.press("up")
        await pilot.pause()
        assert prompt.text == "half a thought"
        assert not of_kind(app.runtime.thread.log.events, ev.InboxQueued)


async def test_ctrl_c_copies_text_selected_in_the_prompt(app_factory, server):
    app = app_factory()
    copied: list[str] = []
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "keep me")
        await pilot.press("shift+home", "ctrl+c")
        await pilot.pause()
        assert copied == ["keep me"]
        assert app.query_one(PromptInput).text == "keep me"


async def test_ctrl_c_never_drops_a_queued_prompt_being_edited(app_factory, server):
    """Ctrl+C cancels the reply first; the queued prompt being edited is held, so it does
    not run with its old text; the next Ctrl+C drops only the edit (the text stays
    reachable with Up) and the prompt runs as it was queued."""
    server.script(s.text("slow", hold=True), s.text("second"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "first")
        await pilot.press("enter")
        await server.wait_requests(1)
        await type_text(pilot, "queued one")
        await pilot.press("enter")
        await until(pilot, lambda: bool(_queue(app)))
        app.query_one(QueueList).focus()
        await pilot.press("e")
        await pilot.pause()
        prompt = app.query_one(PromptInput)
        assert prompt.text == "queued one" and prompt.editing_item is not None
        await type_text(pilot, " plus")
        await pilot.press("ctrl+c")  # something runs: it is cancelled, the draft stays
        await settle(pilot)
        server.release()
        assert prompt.text == "queued one plus"
        texts = [e.text for e in of_kind(app.runtime.thread.log.events, ev.UserMessage)]
        assert texts == ["first"]  # held while its edit is open
        await pilot.press("ctrl+c")  # idle: the edit is dropped, not the prompt
        await settle(pilot)
        assert prompt.text == "" and prompt.editing_item is None
        texts = [e.text for e in of_kind(app.runtime.thread.log.events, ev.UserMessage)]
        assert texts == ["first", "queued one"]
        assert app.is_running
        await pilot.press("up")
        await pilot.pause()
        assert prompt.text == "queued one plus"


async def test_ctrl_c_on_an_empty_prompt_quits_on_the_second_press(app_factory, server):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        assert any("Ctrl+C again" in n.message for n in app._notifications)
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running)
        assert app.return_value == 0


async def test_another_key_between_two_ctrl_c_does_not_quit(app_factory, server):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await type_text(pilot, "x")
        await pilot.press("backspace")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running


async def test_ctrl_d_on_an_empty_prompt_quits(app_factory, server):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "ab")
        await pilot.press("home", "ctrl+d")  # with text: deletes forward, as before
        await pilot.pause()
        assert app.query_one(PromptInput).text == "b"
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert app.is_running
        await pilot.press("ctrl+d")
        await until(pilot, lambda: not app.is_running)


async def test_clear_starts_a_new_thread(app_factory, server):
    server.script(s.text("answer"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "hello")
        before = app.runtime.thread.id
        await say(pilot, "/clear")
        await until(pilot, lambda: app.runtime is not None and app.runtime.thread.id != before)
        await settle(pilot)
        assert not of_kind(app.runtime.thread.log.events, ev.UserMessage)


async def test_ctrl_y_copies_the_reply_with_focus_in_the_prompt(app_factory, server):
    server.script(s.text("the reply to copy"))
    app = app_factory()
    copied: list[str] = []
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "hi")
        prompt = app.query_one(PromptInput)
        assert prompt.has_focus
        await pilot.press("ctrl+y")
        await pilot.pause()
        assert copied == ["the reply to copy"]


async def test_help_lists_every_binding_and_command(app_factory, server):
    from tui.screens.help import HelpScreen, help_bindings, key_label

    app = app_factory()
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = app.screen.text
        for command in app.runtime.commands:
            assert f"/{command.name}" in text and command.summary in text
        rows = help_bindings(type(app), type(app.chat))
        assert rows
        for section, entries in rows:
            assert section in text
            for keys, what in entries:
                assert key_label(keys) in text and what in text
        for key in ("Ctrl+T", "Ctrl+S", "Ctrl+Enter", "Shift+F2", "Ctrl+C", "Ctrl+D", "F1"):
            assert key in text, key


async def test_every_key_stamps_the_app_so_a_streaming_reply_lets_it_go_first(app_factory):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        before = app.typed_at
        await pilot.press("a")
        assert app.typed_at > before
        assert app.query_one(PromptInput).text == "a"
