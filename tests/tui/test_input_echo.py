"""A key's echo is drawn as soon as the key is handled: the chat screen draws that frame
itself, without waiting for Textual's update timer to tick (tui.screens.input_echo).

Each test stops the update timer first, so only the echo path can draw: without it, what
the key changed would wait to be drawn for as long as the test waits. So each first waits
for start-up's last step (the warm-up, a second on): a change it makes after the timer
stopped would never be drawn, and on a loaded machine it can land after the key.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from textual import events

from engine import events as ev
from tests.tui.conftest import LIMIT, app_on_thread, settle, warmed_up
from tui.widgets.prompt_input import PromptInput
from tui.widgets.transcript import Transcript


def _stop_the_update_timer(screen: Any) -> None:
    timer = screen._update_timer
    timer.pause()
    timer.resume = lambda: None  # the screen's idle handler resumes it: no more


def _nothing_to_draw(screen: Any) -> bool:
    return not (
        screen._layout_required
        or screen._scroll_required
        or screen._repaint_required
        or screen._dirty_widgets
    )


async def _until(ready: Any) -> None:
    """Turn the loop until `ready()` holds (a state wait, bounded by LIMIT)."""
    deadline = time.monotonic() + LIMIT
    while not ready():
        assert time.monotonic() < deadline, "the state was never reached"
        await asyncio.sleep(0.001)


async def _quiet(pilot: Any) -> None:
    """Settled, and start-up's warm-up run to its end."""
    await settle(pilot)
    await warmed_up(pilot)
    await settle(pilot)


async def test_keys_typed_into_the_prompt_are_drawn_at_once(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(100, 30)) as pilot:
        await _quiet(pilot)
        screen = app.screen
        prompt = app.query_one(PromptInput)
        _stop_the_update_timer(screen)
        for typed in ("h", "hi"):
            pressed = time.monotonic()
            app.post_message(events.Key(typed[-1], typed[-1]))
            await _until(lambda want=typed: prompt.text == want and _nothing_to_draw(screen))
            assert app.echoed_at >= pressed  # said, for a reply's frame held back for keys
        assert prompt.text == "hi"


async def test_a_paste_is_drawn_at_once(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(100, 30)) as pilot:
        await _quiet(pilot)
        screen = app.screen
        prompt = app.query_one(PromptInput)
        _stop_the_update_timer(screen)
        app.post_message(events.Paste("pasted\nover two lines"))
        await _until(lambda: bool(prompt.text) and _nothing_to_draw(screen))
        assert prompt.text == "pasted\nover two lines"


async def test_a_page_key_scrolls_the_transcript_and_is_drawn_at_once(
    app_factory, tmp_path
) -> None:
    messages = (ev.UserMessage(text=f"message {n}") for n in range(60))
    app = app_on_thread(app_factory, tmp_path / "home", "t-echo", messages)
    async with app.run_test(size=(100, 30)) as pilot:
        await _quiet(pilot)
        screen = app.screen
        transcript = app.query_one(Transcript)
        bottom = transcript.scroll_y
        _stop_the_update_timer(screen)
        app.post_message(events.Key("pageup", None))
        await _until(lambda: transcript.scroll_y < bottom and _nothing_to_draw(screen))
        assert app.query_one(PromptInput).has_focus


async def test_a_key_in_a_dialog_is_drawn_at_once(app_factory, tmp_path) -> None:
    """The threads list (over the chat screen) draws the highlight a key moved at once too,
    and so does the help's scroll."""
    from textual.widgets import OptionList

    from tui.screens.help import HelpScreen
    from tui.screens.threads import ThreadsScreen

    home = tmp_path / "home"
    for name in ("t-one", "t-two", "t-three"):
        app_on_thread(app_factory, home, name, [ev.UserMessage(text=f"in {name}")])
    app = app_on_thread(app_factory, home, "t-echo", [ev.UserMessage(text="here")])
    async with app.run_test(size=(100, 30)) as pilot:
        await _quiet(pilot)
        await pilot.press("ctrl+t")
        await _until(lambda: isinstance(app.screen, ThreadsScreen))
        screen = app.screen
        options = screen.query_one(OptionList)
        await _until(lambda: options.highlighted is not None and _nothing_to_draw(screen))
        first = options.highlighted
        _stop_the_update_timer(screen)
        app.post_message(events.Key("down", None))
        await _until(lambda: options.highlighted != first and _nothing_to_draw(screen))
        await pilot.press("escape")
        await _until(lambda: not isinstance(app.screen, ThreadsScreen))

        await pilot.press("f1")
        await _until(lambda: isinstance(app.screen, HelpScreen))
        screen = app.screen
        await _until(lambda: _nothing_to_draw(screen))
        scrolled = next(w for w in screen.query("*") if w.allow_vertical_scroll)
        _stop_the_update_timer(screen)
        app.post_message(events.Key("down", None))
        await _until(lambda: scrolled.scroll_y > 0 and _nothing_to_draw(screen))
