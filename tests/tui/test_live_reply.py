"""A reply streamed live ends as one widget showing the log's text, as a resumed one does."""

from __future__ import annotations

import gc
from typing import Any

from textual.geometry import Region
from textual.widget import Widget

from devtools import scripted_server as s
from engine import events as ev
from engine.runtime.commands_replies import choose_copy
from engine.util.safe_text import safe_text
from tests.support import of_kind
from tests.tui.conftest import say, settle, type_text, until
from tui.live import collection
from tui.widgets.assistant_message import AssistantMessage
from tui.widgets.chat_message import PastReply

REPLY = (
    "Paris is the capital of **France**.\n\n"
    "- it has about 2.1 million inhabitants\n- it lies on the Seine\n\n"
    "```\ncode stays as it is\n```\n\nThe end, with a \x1b[31mred\x1b[0m escape."
)


def drawn(widget: Widget) -> list[str]:
    width, height = widget.size
    return [line.text for line in widget.render_lines(Region(0, 0, width, height))]


async def resumed_copy(app: Any, pilot: Any, text: str) -> PastReply:
    """The same reply as a resumed thread shows it, mounted in the transcript below it."""
    resumed = PastReply(text)
    await app.query_one("Transcript").mount(resumed)
    await pilot.pause()
    return resumed


async def test_a_finished_reply_is_one_widget_drawn_like_a_resumed_one(app_factory, server):
    server.script(s.text(REPLY))
    app = app_factory()
    # Tall enough that the copy mounted below (after the new thread's welcome line) adds no
    # scrollbar, which would narrow every line by one column.
    async with app.run_test(size=(100, 48)) as pilot:
        await settle(pilot)
        await say(pilot, "tell me")
        (reply,) = app.query(AssistantMessage)
        (logged,) = of_kind(app.runtime.thread.log.events, ev.AssistantMessage)
        assert not reply.children  # no widget per block, no streaming parts left
        assert reply.text == safe_text(logged.content or "") and "\x1b" not in reply.text
        copied, _ = choose_copy(app.runtime.thread.log, "")
        assert copied == reply.text  # what /copy copies
        live = drawn(reply)
        assert any("code stays as it is" in line for line in live)

        resumed = await resumed_copy(app, pilot, logged.content or "")
        assert resumed.size == reply.size
        assert drawn(resumed) == live


LONG = "\n\n".join(f"Paragraph {i}: " + "word " * 60 for i in range(40))


async def _drawn_whole_as_resumed(app: Any, pilot: Any, reply: PastReply, lines: list) -> None:
    """The finished long reply's lines are all of it, and it draws as the resumed one."""
    assert len(lines) == reply.size.height
    assert any("Paragraph 39" in line.text for line in lines[-6:])
    resumed = await resumed_copy(app, pilot, LONG)
    assert resumed.size == reply.size
    assert drawn(resumed) == drawn(reply)


async def test_a_long_reply_keeps_its_streamed_rows_and_draws_as_a_resumed_one(
    app_factory, server, monkeypatch
):
    """A long reply streamed to its end keeps the rows it streamed as its lines: the
    reply is not parsed and rendered again, and it draws as the resumed reply does."""
    from tui.widgets import assistant_message

    made: list[str] = []
    real = assistant_message._render_whole

    def spy(*args):
        made.append("render")
        return real(*args)

    monkeypatch.setattr(assistant_message, "_render_whole", spy)
    text = LONG
    server.script(s.text(text))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "a long one")
        (reply,) = app.query(AssistantMessage)
        assert made == []
        assert reply._drawn_lines is not None
        await _drawn_whole_as_resumed(app, pilot, reply, reply._drawn_lines[1])


async def test_a_long_reply_is_rendered_whole_off_the_loop_when_its_rows_cannot_stay(
    app_factory, server, monkeypatch
):
    """When the streamed rows cannot be the reply's lines, the whole text is rendered
    again; for a long reply that took tens of milliseconds of the UI loop, so it runs in a
    worker thread and the loop only installs the lines: drawing afterwards renders nothing."""
    import threading

    from tui.widgets import assistant_message

    made: list[tuple[str, list]] = []
    real = assistant_message._render_whole

    def spy(*args):
        source, lines = real(*args)
        made.append((threading.current_thread().name, lines))
        return source, lines

    monkeypatch.setattr(assistant_message, "_render_whole", spy)

    async def none(*args: object) -> None:
        return None

    monkeypatch.setattr(AssistantMessage, "_streamed_lines", none)
    text = LONG
    server.script(s.text(text))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "a long one")
        (reply,) = app.query(AssistantMessage)
        [(thread_name, lines)] = made
        assert thread_name != threading.main_thread().name
        assert reply._drawn_lines is not None and reply._drawn_lines[1] is lines
        reply.refresh(layout=True)
        await pilot.pause()
        assert reply._drawn_lines[1] is lines  # the layout and the drawing used them as made
        await _drawn_whole_as_resumed(app, pilot, reply, lines)


async def test_a_turn_holds_full_collections_from_its_start_to_its_end(
    app_factory, server, monkeypatch
) -> None:
    seen: list[tuple[str, bool]] = []
    hold, release = collection.hold_full, collection.release_full

    def holding() -> None:
        hold()
        seen.append(("hold", collection.holding()))

    def releasing() -> None:
        release()
        seen.append(("release", collection.holding()))

    monkeypatch.setattr(collection, "hold_full", holding)
    monkeypatch.setattr(collection, "release_full", releasing)
    before = gc.get_threshold()
    server.script(s.text(REPLY))
    app = app_factory()
    async with app.run_test(size=(100, 48)) as pilot:
        await settle(pilot)
        await say(pilot, "tell me")
        await settle(pilot)
        # The turn's hold and its reply's, each released; the app keeps full collections
        # for its quiet moments until it ends, then the threshold comes back.
        assert [kind for kind, _ in seen] == ["hold", "hold", "release", "release"], seen
        assert seen[-1] == ("release", False)
        assert not collection.holding()
        assert gc.get_threshold()[2] == collection.OUT_OF_REACH
    assert gc.get_threshold() == before


async def test_an_app_closed_mid_turn_leaves_full_collections_as_they_were(
    app_factory, server
) -> None:
    """The turn's hold and its streaming reply's end with the screen, not with the turn:
    a closed app must not leave the process with full collections held."""
    before = gc.get_threshold()
    server.script(s.text(REPLY, hold=True))
    app = app_factory()
    async with app.run_test(size=(100, 48)) as pilot:
        await settle(pilot)
        await type_text(pilot, "tell me")
        await pilot.press("enter")
        await server.wait_requests(1)
        await until(pilot, collection.holding)
    server.release()
    assert not collection.holding()
    assert gc.get_threshold() == before
