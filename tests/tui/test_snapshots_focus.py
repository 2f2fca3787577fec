"""Snapshots of the focus and layout fixes of issue 12 (review each SVG as a PNG first)."""

from __future__ import annotations

from typing import Any

from devtools import scripted_server as s
from tests.tui.conftest import say, settle

LONG = "\n\n".join(f"Paragraph {n} of a long answer." for n in range(12))


def test_reply_after_focus_visited_the_transcript(snap_compare, app_factory, server):
    """Three long answers fill the view; then Tab, Down, Shift+Tab and a prompt: the view
    has followed, so "after the focus moved" and its reply "This reply is in view." are the
    last lines above the prompt, which has the focus again; no "new messages" line."""
    for _ in range(3):
        server.script(s.text(LONG))
    server.script(s.text("This reply is in view."))

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        for n in range(3):
            await say(pilot, f"question {n}")
        await pilot.press("tab", "down", "shift+tab")
        await say(pilot, "after the focus moved")
        await pilot.pause()

    assert snap_compare(app_factory(), terminal_size=(100, 32), run_before=run_before)


def test_main_screen_on_80_columns(snap_compare, app_factory, server):
    """80x24 with a real-length thread id and a long model label: the header keeps
    "context 0%" at the right end and drops its "thread"/"model" labels and the end of the
    model name instead; an exchange below it and the footer's keys."""
    server.script(s.text("A short answer that fits on one line at 80 columns."))

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        title = pilot.app.query_one("TitleBar")
        title.thread = "20261201-025426-ab12"
        title.model = "local · SmolLM2-135M-Instruct · offline"
        await say(pilot, "a question at 80 columns")

    assert snap_compare(app_factory(), terminal_size=(80, 24), run_before=run_before)
