"""Focus paths and the transcript's view: no key sequence may hide a reply or eat typed text."""

from __future__ import annotations

from typing import Any

from devtools import scripted_server as s
from tests.tui.conftest import say, settle, type_text, until
from tui.app import TroveApp
from tui.widgets.chat_message import UserMessage
from tui.widgets.prompt_input import PromptInput
from tui.widgets.transcript import Transcript

LONG = "\n\n".join(f"Paragraph {n} of a long answer." for n in range(12))


def in_view(app: TroveApp, widget: Any) -> bool:
    """The widget's last line lies inside the transcript's visible rows."""
    transcript = app.query_one(Transcript)
    region = widget.virtual_region
    top = transcript.scroll_y
    return (
        region.height > 0
        and top <= region.bottom - 1 < top + transcript.scrollable_content_region.height
    )


def newest_reply(app: TroveApp) -> Any:
    return app.query("AssistantMessage, PastReply").last()


async def fill_the_view(pilot: Any, server: Any, exchanges: int = 3) -> None:
    for n in range(exchanges):
        server.script(s.text(LONG))
        await say(pilot, f"question {n}")


async def test_a_reply_shows_after_focus_visited_the_transcript(app_factory, server):
    """Issue 12 item 1: Tab, Down, Shift+Tab, then a prompt: its reply is in view."""
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await fill_the_view(pilot, server)
        assert in_view(app, newest_reply(app))
        await pilot.press("tab", "down", "shift+tab")
        await pilot.pause()
        assert app.query_one(PromptInput).has_focus
        server.script(s.text("the answer after the focus moved"))
        await say(pilot, "after focus moved")
        reply = newest_reply(app)
        assert reply.text == "the answer after the focus moved"
        await pilot.pause()
        assert in_view(app, reply)
        server.script(s.text("and the next one"))
        await say(pilot, "one more")
        await pilot.pause()
        assert in_view(app, newest_reply(app))


async def test_output_not_sent_from_the_prompt_follows_after_focus_moved(app_factory, server):
    """The same keys, then a reply to a prompt that did not come through the prompt (a
    queued one, say): the view follows it too, with no jump on send to help it."""
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await fill_the_view(pilot, server)
        await pilot.press("tab", "down", "shift+tab")
        await pilot.pause()
        server.script(s.text(LONG))
        app.runtime.driver.send("sent from elsewhere")
        await settle(pilot)
        await pilot.pause()
        assert in_view(app, newest_reply(app))
        assert not app.query_one("#new-output").display


async def test_scrolled_up_the_view_stays_and_a_marker_jumps_to_the_end(app_factory, server):
    """Reading back is not disturbed by new output; the marker (click, or End) jumps down."""
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await fill_the_view(pilot, server)
        transcript = app.query_one(Transcript)
        transcript.focus()
        await pilot.press("home")
        await pilot.pause()
        assert transcript.scroll_y == 0
        server.script(s.text("new output while reading back"))
        app.runtime.driver.send("sent from elsewhere")
        await settle(pilot)
        await pilot.pause()
        assert transcript.scroll_y == 0
        marker = app.query_one("#new-output")
        assert marker.display
        await pilot.click("#new-output")
        await pilot.pause()
        assert in_view(app, newest_reply(app)) and not marker.display
        # Scrolled up again: End also jumps and clears the marker.
        transcript.focus()
        await pilot.press("home")
        server.script(s.text("more output"))
        app.runtime.driver.send("again from elsewhere")
        await settle(pilot)
        assert marker.display
        await pilot.press("end")
        await pilot.pause()
        assert in_view(app, newest_reply(app)) and not marker.display


async def test_sending_jumps_to_the_end_even_when_scrolled_up(app_factory, server):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await fill_the_view(pilot, server)
        transcript = app.query_one(Transcript)
        transcript.focus()
        await pilot.press("home")
        app.query_one(PromptInput).focus()
        server.script(s.text("reply to a prompt sent while scrolled up"))
        await say(pilot, "sent while scrolled up")
        await pilot.pause()
        assert in_view(app, newest_reply(app))
        assert in_view(app, app.query(UserMessage).last())


async def test_text_typed_on_the_transcript_goes_to_the_prompt(app_factory, server):
    """Issue 12 item 2: with focus on the transcript, `hello again` + Enter is sent."""
    server.script(s.text("first"), s.text("hello back"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "hi")
        await pilot.press("tab")
        await pilot.pause()
        assert app.query_one(Transcript).has_focus
        await say(pilot, "hello again")
        prompt = app.query_one(PromptInput)
        assert prompt.has_focus
        texts = [m.text for m in app.query(UserMessage)]
        assert texts[-1] == "hello again"
        assert newest_reply(app).text == "hello back"


async def test_inspector_tabs_focus_their_input_and_typing_reaches_it(app_factory, server):
    """F2 to Search focuses the query box; Enter searches; a second query replaces the
    first in the box (it never lands in the results list)."""
    from textual.widgets import TabbedContent

    from tui.inspector.inspector import ArchiveInspector
    from tui.inspector.search_tab import ResultList, SearchBox

    server.script(s.text("The code is ZEBRA-41."), s.text("ok"))
    app = app_factory()
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "remember ZEBRA-41")
        await pilot.press("ctrl+o")
        inspector = app.query_one(ArchiveInspector)
        # Its keys are its own once it holds the focus (its data read off the loop first).
        await until(pilot, lambda: inspector.has_focus_within)
        await pilot.press("f2")
        await pilot.pause()
        tabs = app.query_one("#inspector-tabs", TabbedContent)
        assert tabs.active == "search"
        box = app.query_one(SearchBox)
        assert box.has_focus
        await type_text(pilot, "ZEBRA")
        await pilot.press("enter")
        results = app.query_one(ResultList)
        await until(pilot, lambda: results.option_count > 0)
        assert box.value == "ZEBRA"
        # Focus on the results: a typed query goes back to the box, Enter searches it.
        results.focus()
        await pilot.pause()
        await type_text(pilot, "x")
        await pilot.pause()
        assert box.has_focus and box.value.endswith("x")
        assert tabs.active == "search"


async def test_typing_on_the_batches_table_starts_a_search(app_factory, server):
    """Ctrl+O opens on the Batches table; a typed word goes to the Search box, not nowhere."""
    from textual.widgets import TabbedContent

    from tui.inspector.search_tab import SearchBox

    app = app_factory()
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: app.chat.inspector_shown)
        await pilot.pause()
        await type_text(pilot, "code 7")
        await pilot.pause()
        box = app.query_one(SearchBox)
        assert app.query_one("#inspector-tabs", TabbedContent).active == "search"
        assert box.value == "code 7" and box.has_focus


async def test_tab_from_the_prompt_reaches_the_queue(app_factory, server):
    """README and help: Tab from the prompt moves to the queue; Delete removes an item there.
    With nothing queued, Tab moves the focus as usual."""
    from engine import events as ev
    from tests.support import of_kind
    from tui.widgets.status_strip import QueueList

    server.script(s.text("slow", hold="before"), s.text("b answer"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await pilot.press("tab")
        await pilot.pause()
        assert app.query_one(Transcript).has_focus  # nothing queued: the usual order
        await pilot.press("shift+tab")
        await pilot.pause()
        await type_text(pilot, "a")
        await pilot.press("enter")
        await server.wait_requests(1)
        for text in ("b", "x"):
            await type_text(pilot, text)
            await pilot.press("enter")
        await pilot.pause()
        queue = app.query_one(QueueList)
        assert queue.option_count == 2
        assert "focus_queue" in [b.binding.action for b in app.screen.active_bindings.values()]
        await pilot.press("tab")
        await pilot.pause()
        assert queue.has_focus
        await pilot.press("down", "delete")
        await pilot.pause()
        assert queue.option_count == 1
        server.release()
        await settle(pilot)
        texts = [e.text for e in of_kind(app.runtime.thread.log.events, ev.UserMessage)]
        assert texts == ["a", "b"]


async def test_at_80_columns_the_header_keeps_the_context_figure(app_factory, server):
    """Issue 12 item 11: a real thread id and a long model label at 80 columns; the context
    figure stays, less important parts of the header give way first."""
    from tui.widgets.title_bar import TitleBar

    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        title = app.query_one(TitleBar)
        title.thread = "20261201-025426-ab12"
        title.model = "local · SmolLM2-135M-Instruct · offline"
        title.context_used = 0.42
        await pilot.pause()
        shown = str(title.render())
        assert len(shown) <= 78
        assert shown.rstrip().endswith("context 42%")
        assert "20261201-025426-ab12" in shown
        await pilot.resize_terminal(120, 24)
        await pilot.pause()
        assert "model local · SmolLM2-135M-Instruct · offline" in str(title.render())


async def test_at_80_columns_the_inspector_takes_the_screen(app_factory, server):
    """A 40/40 split is too cramped to read an archive: at 80 columns the inspector takes the
    whole width (Esc gives the chat back)."""
    from tui.inspector.inspector import ArchiveInspector

    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: app.chat.inspector_shown)
        await pilot.pause()
        assert app.query_one(ArchiveInspector).size.width == 80
        await pilot.press("escape")
        await pilot.pause()
        assert app.query_one(PromptInput).has_focus and not app.chat.inspector_shown
