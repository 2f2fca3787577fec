"""Replies wrap at a readable width on wide terminals: `ui.max_width` (issue 28, point 6).

The transcript's messages are at most that many columns wide, from the transcript's
left edge (where the prompt's text starts too); the scrollbar stays at the right edge.
Narrower terminals are as before, and 0 or null means the whole width.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devtools import scripted_server as s
from engine.config import parse_config
from tests.tui.conftest import app_for, settle
from tui.app import TroveApp
from tui.widgets.chat_message import PastReply, UserMessage
from tui.widgets.prompt_input import PromptInput
from tui.widgets.transcript import Transcript

LONG = " ".join(f"word{n:03d}" for n in range(120))
"""About 960 characters: many lines at any width."""
REPLY = (
    "A reply long enough to wrap: "
    + " ".join(f"part{n:03d}" for n in range(90))
    + "\n\n```python\nprint('a code block keeps its own lines')\n```"
)


def wide_app(home: Path, server: Any, **ui: Any) -> TroveApp:
    config = parse_config(
        {
            "model": {
                "base_url": server.base_url,
                "api_key": "k",
                "name": "scripted-model",
                "context_window": 4000,
                "max_retries": 0,
            },
            "ui": ui,
        },
        source="test",
        env={},
    )
    return app_for(config, home, server)


async def exchange(pilot: Any, server: Any) -> None:
    """The long prompt sent as if pasted (typing it key by key only slows the test)."""
    server.script(s.text(REPLY))
    await settle(pilot)
    pilot.app.query_one(PromptInput).set_value(LONG)
    await pilot.press("enter")
    await settle(pilot)


async def test_messages_wrap_at_max_width_on_a_wide_terminal(tmp_path, server):
    app = wide_app(tmp_path / "home", server)
    async with app.run_test(size=(200, 40)) as pilot:
        await exchange(pilot, server)
        transcript = app.query_one(Transcript)
        assert transcript.region.width == 200  # the scrollbar stays at the right edge
        for widget in (app.query_one(UserMessage), app.query_one(PastReply)):
            assert widget.region.x == transcript.region.x + 1  # from the left, as before
            assert widget.region.width == 100
        assert app.query_one(UserMessage).region.height > LONG.count(" ") // 20  # wrapped


async def test_a_narrower_terminal_and_max_width_0_use_the_whole_width(tmp_path, server):
    for size, ui in (
        ((90, 30), {}),
        ((200, 40), {"max_width": 0}),
        ((200, 40), {"max_width": None}),
    ):
        app = wide_app(tmp_path / f"home-{size[0]}-{ui}", server, **ui)
        async with app.run_test(size=size) as pilot:
            await exchange(pilot, server)
            transcript = app.query_one(Transcript)
            widths = {
                w.region.width for w in (app.query_one(UserMessage), app.query_one(PastReply))
            }
            assert widths == {transcript.scrollable_content_region.width}, (size, ui)
            assert transcript.scrollable_content_region.width >= size[0] - 4


async def test_the_width_follows_the_transcript_when_the_inspector_opens(tmp_path, server):
    app = wide_app(tmp_path / "home", server)
    async with app.run_test(size=(160, 40)) as pilot:
        await exchange(pilot, server)
        transcript = app.query_one(Transcript)
        assert app.query_one(PastReply).region.width == 100
        await pilot.press("ctrl+o")  # the inspector takes the right part of the screen
        await settle(pilot)
        room = transcript.scrollable_content_region.width
        assert room < 100
        assert app.query_one(PastReply).region.width == room
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert app.query_one(PastReply).region.width == 100


def test_a_wide_terminal_snapshot(snap_compare, tmp_path, server, monkeypatch):
    """200 columns: the user's long message and the reply (with a code block) wrap at 100
    columns from the left edge; the title bar, status and prompt span the whole width, the
    scrollbar is at the right edge."""

    async def run_before(pilot: Any) -> None:
        await exchange(pilot, server)

    monkeypatch.setenv("HOME", str(tmp_path))  # the welcome's data dir as "~/home/…"
    app = wide_app(tmp_path / "home", server)
    assert snap_compare(app, terminal_size=(200, 40), run_before=run_before)
