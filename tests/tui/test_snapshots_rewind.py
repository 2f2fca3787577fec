"""Snapshot of the rewind picker (review the SVG as a PNG before accepting)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devtools import scripted_server as s
from tests.tui.conftest import say, settle, until
from tui.screens.rewind import RewindScreen

SIZE = (100, 32)


def test_rewind_picker(snap_compare, app_factory, server, monkeypatch: pytest.MonkeyPatch):
    """Esc Esc on the empty prompt after a rewind: a dialog over the dimmed chat, "Rewind —
    go back to just before a prompt" and its hint, then the prompts newest first with their
    times (09:00 … 09:04): "a new direction" and "first question" on the line, "third
    question" and "second question" marked ○ "(another branch)"; the first is highlighted."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    server.script(s.text("One."), s.text("Two."), s.text("Three."), s.text("New."))
    minutes = iter(range(100))

    def clock() -> datetime:
        return datetime(2026, 12, 1, 9, 0, tzinfo=UTC) + timedelta(seconds=20 * next(minutes))

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.runtime.thread.log.clock = clock
        await say(pilot, "first question")
        await say(pilot, "second question")
        await say(pilot, "third question")
        await say(pilot, "/rewind 2")
        await pilot.press("ctrl+c")
        await say(pilot, "a new direction")
        pilot.app.clear_notifications()
        await pilot.press("escape", "escape")
        await until(pilot, lambda: isinstance(pilot.app.screen, RewindScreen))
        await pilot.pause()

    try:
        assert snap_compare(app_factory(), terminal_size=SIZE, run_before=run_before)
    finally:
        monkeypatch.undo()
        time.tzset()
