"""Fixtures for driving the Textual app against the scripted server.

Snapshots are deterministic: a fixed thread id, a frozen clock, no cursor
blink and no animation. pytest-textual-snapshot (syrupy) writes to
tests/tui/__snapshots__, which is a link to the repository's snapshots/.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from engine.config import parse_config
from tests.support import client_for
from tui.app import TroveApp
from tui.widgets.transcript import Transcript

FROZEN = 1000.0


def make_app(home: Path, server: Any, *, configured: bool = True, **compaction: Any) -> TroveApp:
    compaction.setdefault("keep_recent_tokens", 0)
    config = parse_config(
        {
            "model": {
                "base_url": server.base_url,
                "api_key": "k",
                "name": "scripted-model",
                "context_window": 4000,
                "max_retries": 0,
            },
            "compaction": compaction,
        },
        source="test",
        env={},
    )
    app = TroveApp(
        config,
        home,
        model=client_for(server),
        configured=configured,
        clock=lambda: FROZEN,
        new_thread_id="t-snapshot",
        config_label="~/.local/share/trove/config.yaml",
    )
    app.animation_level = "none"
    return app


async def settle(pilot: Pilot[Any]) -> None:
    """Wait for the engine to go idle and the transcript to finish rendering."""
    app = pilot.app
    await pilot.pause()
    runtime = app.runtime  # type: ignore[attr-defined]
    if runtime is not None:
        await asyncio.wait_for(runtime.driver.when_idle(), 10)
    transcript = app.query_one(Transcript)
    for _ in range(3):
        if transcript._pending:
            await asyncio.gather(*transcript._pending, return_exceptions=True)
        await pilot.pause()
    workers = [w for w in app.workers if w.group == "commands"]
    for worker in workers:
        await worker.wait()
    await pilot.pause()


async def type_text(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*[("space" if ch == " " else ch) for ch in text])


async def say(pilot: Pilot[Any], text: str) -> None:
    await type_text(pilot, text)
    await pilot.press("enter")
    await settle(pilot)


@pytest.fixture
def app_factory(tmp_path: Path, server: Any) -> Callable[..., TroveApp]:
    def factory(**kw: Any) -> TroveApp:
        return make_app(tmp_path / "home", server, **kw)

    return factory
