"""Driving the assembled TUI with real keystrokes; assertions on the log and widgets."""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from devtools import scripted_server as s
from engine import events as ev
from tests.support import chat_messages, of_kind
from tests.tui.conftest import say, settle, type_text, until
from tui.widgets.chat_message import Notice
from tui.widgets.prompt_input import PromptInput
from tui.widgets.status_strip import QueueList
from tui.widgets.title_bar import TitleBar


async def test_seed_scenario_through_the_tui(app_factory, server):
    """/help finds /compact; a held summary admits a queued prompt and an injection."""
    server.script(s.text("first answer"), s.text("second answer"), s.text("summary", hold="before"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "/help")
        assert "/compact" in app.screen.text
        await pilot.press("escape")
        await pilot.pause()
        await say(pilot, "first question")
        await say(pilot, "second question")
        await type_text(pilot, "/compact")
        await pilot.press("enter")
        await server.wait_requests(3)
        await type_text(pilot, "queued prompt")
        await pilot.press("enter")
        await pilot.pause()
        app.runtime.driver.inject("injected context")
        queue = app.query_one(QueueList)
        assert queue.option_count == 1
        assert app.query_one(PromptInput).text == ""  # the input is free again
        server.release()
        await settle(pilot)
        events = app.runtime.thread.log.events
        start = of_kind(events, ev.CompactStart)[-1]
        end = of_kind(events, ev.CompactEnd)[-1]
        turn = of_kind(events, ev.TurnStart)[-1]
        assert start.turn is None and end.turn is None and end.error is None
        assert end.seq < turn.seq
        queued = [e for e in events if isinstance(e, ev.InboxQueued)][-1]
        assert turn.items == (queued.seq,)  # the original id
        contents = [m["content"] for m in chat_messages(server.requests[-1])]
        assert contents[0].startswith("[Checkpoint")
        assert contents[1:] == ["injected context", "queued prompt"]
        runs = [e for e in events if isinstance(e, (ev.CommandRun, ev.CommandDone))]
        assert [e.name for e in runs] == ["help", "help", "compact", "compact"]
        assert all("/compact" not in str(m) for m in server.requests[-1]["messages"])


async def test_queue_keeps_order_and_removes_items(app_factory, server):
    server.script(s.text("slow", hold="before"), s.text("b answer"), s.text("c answer"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "a")
        await pilot.press("enter")
        await server.wait_requests(1)
        for text in ("b", "x", "c"):
            await type_text(pilot, text)
            await pilot.press("enter")
        await pilot.pause()
        queue = app.query_one(QueueList)
        assert [str(queue.get_option_at_index(i).prompt) for i in range(3)] == [
            "1. [queued] b",
            "2. [queued] x",
            "3. [queued] c",
        ]
        queue.focus()
        await pilot.press("down", "delete")
        await pilot.pause()
        assert queue.option_count == 2
        server.release()
        await settle(pilot)
        texts = [e.text for e in of_kind(app.runtime.thread.log.events, ev.UserMessage)]
        assert texts == ["a", "b", "c"]
        assert of_kind(app.runtime.thread.log.events, ev.InboxRemoved)


async def test_editing_a_queued_prompt_keeps_its_id(app_factory, server):
    server.script(s.text("slow", hold="before"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "first")
        await pilot.press("enter")
        await server.wait_requests(1)
        await type_text(pilot, "draft")
        await pilot.press("enter")
        await pilot.pause()
        item = app.runtime.driver.inbox[0].id
        queue = app.query_one(QueueList)
        queue.focus()
        await pilot.press("e")
        await pilot.pause()
        prompt = app.query_one(PromptInput)
        assert prompt.text == "draft" and prompt.has_focus
        await pilot.press("backspace", "backspace", "backspace", "backspace", "backspace")
        await type_text(pilot, "final")
        await pilot.press("enter")
        await pilot.pause()
        assert [(i.id, i.text) for i in app.runtime.driver.inbox] == [(item, "final")]
        server.release()
        await settle(pilot)
        start = of_kind(app.runtime.thread.log.events, ev.TurnStart)[-1]
        assert start.items == (item,)


def _footer_actions(app) -> list[str]:
    """The actions the footer shows now, as a person reads them."""
    return [key.action for key in app.screen.query(FooterKey)]


async def test_escape_cancels_the_running_reply(app_factory, server):
    server.script(s.text("a long answer that is interrupted", hold=True))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "tell me")
        await pilot.press("enter")
        await server.wait_requests(1)
        await until(pilot, lambda: bool(app.runtime.driver.partial_reply))
        assert app.chat.check_action("cancel", ()) is True
        await until(pilot, lambda: "chat('cancel')" in _footer_actions(app))  # "Esc Cancel" offered
        await pilot.press("escape")
        await settle(pilot)
        server.release()
        end = of_kind(app.runtime.thread.log.events, ev.TurnEnd)[-1]
        assert end.status == "cancelled"
        assert app.chat.check_action("cancel", ()) is False
        await until(pilot, lambda: "chat('cancel')" not in _footer_actions(app))  # hidden again
        notices = [n.text for n in app.query(Notice)]
        assert any("cancelled" in text for text in notices)


async def test_escape_cancels_a_compaction_and_keeps_the_queue(app_factory, server):
    server.script(s.text("one"), s.text("two"), s.text("never", hold="before"), s.text("after"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "one")
        await say(pilot, "two")
        await type_text(pilot, "/compact")
        await pilot.press("enter")
        await server.wait_requests(3)
        await type_text(pilot, "waiting")
        await pilot.press("enter")
        await pilot.press("escape")
        await settle(pilot)
        server.release()
        events = app.runtime.thread.log.events
        end = of_kind(events, ev.CompactEnd)[-1]
        assert end.error == "summary" and end.cancelled
        assert of_kind(events, ev.UserMessage)[-1].text == "waiting"
        assert of_kind(events, ev.TurnEnd)[-1].status == "ok"


async def test_switching_threads(app_factory, server, tmp_path):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "in the first thread")
        first = app.runtime.thread.id
        await say(pilot, "/new")
        await settle(pilot)
        second = app.runtime.thread.id
        assert second != first
        assert app.query_one(TitleBar).thread == second
        await say(pilot, "in the second thread")
        await app.chat.switch_thread(first)
        await settle(pilot)
        assert app.runtime.thread.id == first
        texts = [e.text for e in of_kind(app.runtime.thread.log.events, ev.UserMessage)]
        assert texts == ["in the first thread"]
        assert of_kind(app.runtime.thread.log.events, ev.EndSeed)


async def test_failed_turn_puts_the_prompt_back(app_factory, server):
    server.script(s.error(401, "invalid key"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "please answer")
        assert app.query_one(PromptInput).text == "please answer"
        errors = [n.text for n in app.query(Notice) if n.has_class("-error")]
        assert errors and "401" in errors[0]


async def test_history_recall_with_up(app_factory, server):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "earlier prompt")
        await pilot.press("up")
        assert app.query_one(PromptInput).text == "earlier prompt"
        await pilot.press("down")
        assert app.query_one(PromptInput).text == ""


async def test_fork_and_export(app_factory, server, tmp_path):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "worth keeping")
        parent = app.runtime.thread.id
        await say(pilot, "/fork")
        await settle(pilot)
        child = app.runtime.thread.id
        assert child != parent
        assert [m["content"] for m in app.runtime.driver.surface.messages()] == [
            "worth keeping",
            "echo: worth keeping",
        ]
        await say(pilot, "/export")
        exported = sorted(p.name for p in (tmp_path / "home" / "exports").iterdir())
        assert exported == [f"{child}.json", f"{child}.md"]
        text = (tmp_path / "home" / "exports" / f"{child}.md").read_text()
        assert "worth keeping" in text


async def test_keys_typed_right_after_enter_are_kept(app_factory, server):
    """Nothing typed is lost: keys that arrive before the app handles the send stay."""
    from textual import events

    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        prompt = app.query_one(PromptInput)
        for key, char in [("h", "h"), ("i", "i"), ("enter", None), ("x", "x"), ("y", "y")]:
            # A burst, as from a fast typist: queued on the app, the way a terminal's keys
            # arrive, so the prompt's bindings see them as they would see real ones.
            app.post_message(events.Key(key, char))
        await settle(pilot)
        assert prompt.text == "xy"
        sent = [e.text for e in of_kind(app.runtime.thread.log.events, ev.UserMessage)]
        assert sent == ["hi"]


def _resuming_a_long_thread(app_factory, tmp_path, messages: int):
    """An app that opens thread t-long, of `messages` user messages ("message 0", …)."""
    from engine.threads.thread import Thread

    thread = Thread.create(tmp_path / "home", "local", "t-long")
    for n in range(messages):
        thread.log.append(ev.UserMessage(text=f"message {n}"))
    thread.close()
    app = app_factory()
    app.start_thread = "t-long"
    return app


async def test_transcript_window_stays_bounded_both_ways(app_factory, monkeypatch, tmp_path):
    """Scrolling back loads earlier messages and drops newer ones past the mark, and back."""
    import tui.widgets.transcript as transcript_module

    monkeypatch.setattr(transcript_module, "HIGH_WATER", 40)
    monkeypatch.setattr(transcript_module, "CHUNK", 30)
    app = _resuming_a_long_thread(app_factory, tmp_path, 200)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(transcript_module.Transcript)

        def shown() -> list[str]:
            return [w.text for w in transcript._content()]

        assert shown()[-1] == "message 199" and len(shown()) == 29  # 30 events, one end-seed
        # Each load from the end of the window the view is at, as its rows and keys load:
        # the window never prunes what the view shows.
        for _ in range(4):
            transcript.scroll_to(y=0, animate=False, immediate=True)
            transcript.load_earlier()
            await settle(pilot)  # the window grows a slice a frame
        assert len(shown()) <= 40 + transcript_module.TRIM_SLACK
        assert shown()[0] == "message 51"  # four chunks of 30 before the first 30 events
        assert transcript.query("#load-newer")  # the newest were dropped, reachable again
        while transcript.query("#load-newer"):
            transcript.scroll_to(y=transcript.max_scroll_y, animate=False, immediate=True)
            transcript.load_newer()
            await settle(pilot)
        assert shown()[-1] == "message 199" and len(shown()) <= 40 + transcript_module.TRIM_SLACK
        assert transcript.is_anchored


async def test_the_earlier_row_loads_on_a_click_and_on_enter(app_factory, monkeypatch, tmp_path):
    """The row at the top of a resumed long thread answers the mouse and the keyboard."""
    import tui.widgets.transcript as transcript_module
    from tui.widgets.load_button import LoadButton

    monkeypatch.setattr(transcript_module, "CHUNK", 30)
    app = _resuming_a_long_thread(app_factory, tmp_path, 100)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(transcript_module.Transcript)

        def first() -> str:
            return transcript._content()[0].text

        assert first() == "message 71"  # the newest 30 events, one of them the end-seed
        row = transcript.query_one("#load-earlier", LoadButton)
        assert "71 earlier events" in str(row.render())
        transcript.scroll_home(animate=False)
        await pilot.pause()
        await pilot.click(row)
        await settle(pilot)
        assert first() == "message 41"
        assert "41 earlier events" in str(row.render())
        row.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert first() == "message 11"
        await pilot.press("space")
        await settle(pilot)
        assert first() == "message 0" and not transcript.query("#load-earlier")


async def test_a_thread_with_a_line_that_is_not_json_opens_what_is_before_it(app_factory, tmp_path):
    """The log outranks nothing but itself: a garbled line ends what loads, the app opens
    the thread with a warning, and the bytes from that line on are kept beside the log."""
    from engine.threads.thread import Thread

    thread = Thread.create(tmp_path / "home", "local", "t-broken")
    thread.log.append(ev.UserMessage(text="kept on disk"))
    thread.close()
    path = thread.dir / "session.jsonl"
    good = path.read_bytes()
    path.write_bytes(good + b"{not json\n")
    app = app_factory()
    app.start_thread = "t-broken"
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert app.runtime.thread.id == "t-broken"
        assert "kept on disk" in [
            e.text for e in of_kind(app.runtime.thread.log.events, ev.UserMessage)
        ]
        warnings = [n.text for n in app.query(Notice) if n.has_class("-warning")]
        assert any("session.jsonl:2" in text for text in warnings), warnings
    assert path.read_bytes().startswith(good) and b"not json" not in path.read_bytes()
    (kept,) = [p for p in thread.dir.iterdir() if ".quarantine-" in p.name]
    assert kept.read_bytes() == b"{not json\n"


async def test_alt_enter_steers_the_running_turn(app_factory, server):
    from engine.model.tools import ToolBox
    from tests.support import echo_tool

    server.script(
        s.tool_calls([("echo", {"text": "x"})]), s.text("done", hold="before"), s.text("ok")
    )
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        app.runtime.driver.tools = ToolBox([echo_tool()])
        await type_text(pilot, "start")
        await pilot.press("enter")
        await server.wait_requests(2)
        await type_text(pilot, "steer this")
        await pilot.press("alt+enter")
        await pilot.pause()
        server.release()
        await settle(pilot)
        steered = [e for e in of_kind(app.runtime.thread.log.events, ev.UserMessage) if e.placement]
        assert [(e.text, e.placement) for e in steered] == [("steer this", "next-step")]
        assert len(of_kind(app.runtime.thread.log.events, ev.TurnStart)) == 1


def test_an_unknown_theme_is_a_config_error(tmp_path):
    import pytest

    from engine.config import ConfigError, parse_config
    from tui.startup.run import run_tui

    config = parse_config({"ui": {"theme": "no-such-theme"}}, source="c.yaml", env={})
    with pytest.raises(ConfigError) as err:
        run_tui(config, tmp_path)
    assert "ui.theme" in str(err.value) and "textual-dark" in str(err.value)
    assert "\n" not in str(err.value)


async def test_a_thread_open_in_another_process_opens_read_only(app_factory, held_thread):
    """The second writer gets a view that says so; what the user types is kept."""
    app = app_factory()
    app.start_thread = "t-held"
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert app.runtime.thread.id == "t-held" and app.runtime.thread.read_only
        warnings = [n.text for n in app.query(Notice) if n.has_class("-warning")]
        assert any("open in another Trove process" in w for w in warnings)
        await say(pilot, "my words")
        assert app.query_one(PromptInput).text == "my words"
        errors = [n.text for n in app.query(Notice) if n.has_class("-error")]
        assert errors and errors[-1].startswith("Not sent: read-only view")
        compact = await app.runtime.commands.run("/compact")
        assert not compact.ok and "could not start" in compact.text
        await app.runtime.commands.run("/new")  # commands still work: the way out
        await settle(pilot)
        assert app.runtime.thread.id != "t-held" and not app.runtime.thread.read_only
    before = held_thread.log.path.read_bytes()
    held_thread.log.append(ev.UserMessage(text="the holder goes on"))
    assert held_thread.log.path.read_bytes().startswith(before)


async def test_prompt_keys_edit_complete_and_recall(app_factory, server):
    """The prompt's key map: new lines, Up/Down move within a long prompt and recall history
    only from its first/last line, the slash menu follows Up/Down and Tab/Enter/Esc, and Tab
    without the menu moves the focus on."""
    from tui.widgets.slash_menu import SlashMenu

    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        prompt, menu = app.query_one(PromptInput), app.query_one(SlashMenu)
        await say(pilot, "earlier prompt")
        await type_text(pilot, "a")
        await pilot.press("shift+enter", "b", "ctrl+j", "c")
        assert prompt.text == "a\nb\nc"
        await pilot.press("up")  # from the last line: the cursor moves, no recall
        assert prompt.text == "a\nb\nc" and prompt.cursor_location[0] == 1
        await pilot.press("up", "up")  # on the first line: the history
        assert prompt.text == "earlier prompt"
        await pilot.press("down")  # back to the draft
        assert prompt.text == "a\nb\nc"
        prompt.clear()
        await type_text(pilot, "/co")  # "/c" would start at /clear
        await pilot.pause()
        assert menu.is_open and menu.chosen == "compact"
        await pilot.press("down")
        assert menu.chosen == "copy"
        await pilot.press("up")
        assert menu.chosen == "compact"
        await pilot.press("escape")
        assert not menu.is_open and prompt.text == "/co"
        prompt.clear()
        await type_text(pilot, "/hel")
        await pilot.pause()
        await pilot.press("tab")
        assert prompt.text == "/help" and prompt.has_focus
        prompt.clear()
        await type_text(pilot, "/hel")
        await pilot.pause()
        await pilot.press("enter")  # picks and sends
        await settle(pilot)
        assert "/compact" in app.screen.text
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("tab")
        assert not prompt.has_focus
