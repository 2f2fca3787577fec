"""Snapshots of a reasoning model's thinking (issue 28, point 1; review each SVG as a PNG).

The engine's clock is held still, so every thinking took "0.0s" and the drawing is the
same on every run."""

from __future__ import annotations

from typing import Any

import pytest

from devtools import scripted_server as s
from engine.driver import turn_loop
from engine.driver.thinking import Thinking
from tests.tui.conftest import say, settle
from tui.widgets.thinking_block import ThinkingBlock

THOUGHT = (
    "The user asks about **Rayleigh scattering**. Shorter wavelengths scatter more:\n\n"
    "- blue light, about 450 nm\n- red light, about 700 nm\n\n"
    "So the sky looks blue. I should answer in one sentence."
)


@pytest.fixture
def still_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(turn_loop, "Thinking", lambda: Thinking(clock=lambda: 0.0))


def test_thinking_collapsed_then_expanded(snap_compare, app_factory, server, still_clock):
    """Two exchanges. Above the first answer, the muted italic line "▶ thought for 0.0s
    (189 chars)"; above the second, the same block expanded and focused: "▼ thought for
    0.0s (189 chars)" highlighted, then the thinking indented (bold "Rayleigh scattering",
    a two-item list), then the answer."""
    server.script(
        s.text("The sky is blue because air scatters blue light most.", reasoning=THOUGHT),
        s.text("Sunsets are red because the blue is scattered away.", reasoning=THOUGHT),
    )

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await say(pilot, "Why is the sky blue?")
        await say(pilot, "And sunsets?")
        block = pilot.app.query(ThinkingBlock).last()
        block.focus_title()
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app_factory(), terminal_size=(100, 36), run_before=run_before)
