"""A theme picked in the command palette is kept for the next launch (issue 28, point 6).

It is kept in a small state file in the data dir, written off the loop and atomically;
a damaged, hostile or outdated file means the config's theme, never a crash.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace
from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot
from textual.worker import WorkerCancelled, WorkerFailed

from tests.tui.conftest import settle, type_text, until
from tui.app import TroveApp
from tui.ui_state import STATE_NAME

SIZE = (100, 32)


async def written(pilot: Pilot[Any]) -> None:
    """Wait for the app's state writes (workers, not sleeps)."""
    for worker in [w for w in pilot.app.workers if w.group == "ui-state"]:
        with contextlib.suppress(WorkerCancelled, WorkerFailed):
            await worker.wait()


def shown(app: Any, name: str) -> bool:
    """The palette lists its hits, the first of them `name`."""
    if not isinstance(app.screen, CommandPalette):
        return False
    hits = app.screen.query_one(CommandList)
    return hits.option_count > 0 and str(hits.get_option_at_index(0).prompt).startswith(name)


async def pick_theme(pilot: Pilot[Any], name: str) -> None:
    """Ctrl+P, the Theme command, then the theme, as a user does it."""
    app = pilot.app
    await pilot.press("ctrl+p")
    await until(pilot, lambda: isinstance(app.screen, CommandPalette))
    await type_text(pilot, "theme")
    await until(pilot, lambda: shown(app, "Theme"))
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, CommandPalette))
    await type_text(pilot, name)
    await until(pilot, lambda: shown(app, name))
    await pilot.press("enter")
    await until(pilot, lambda: app.theme == name)
    await written(pilot)


async def test_a_theme_picked_in_the_palette_is_kept_for_the_next_launch(app_factory, tmp_path):
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "textual-dark"
        await pick_theme(pilot, "nord")
    state = tmp_path / "home" / STATE_NAME
    assert state.is_file() and os.stat(state).st_mode & 0o777 == 0o600
    again = app_factory()
    assert again.theme == "nord"
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.theme == "nord"


async def test_the_configs_theme_wins_once_the_config_changes_it(app_factory, tmp_path):
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pick_theme(pilot, "nord")
    edited = app_factory()
    edited.config = replace(edited.config, ui=replace(edited.config.ui, theme="gruvbox"))
    assert TroveApp(edited.config, tmp_path / "home").theme == "gruvbox"


@pytest.mark.parametrize(
    "damage",
    [
        b"{not json",
        b'{"theme": 3}',
        b'{"theme": "no-such-theme", "config_theme": "textual-dark"}',
        b"\xff\xfe" * 100,
        b'{"theme": "nord", "config_theme": "textual-dark"}' + b" " * (2 << 20),  # too large
        "directory",
        "fifo",
        "link",
    ],
)
def test_a_damaged_state_file_means_the_configs_theme(
    app_factory, tmp_path: Path, damage: Any
) -> None:
    state = tmp_path / "home" / STATE_NAME
    state.parent.mkdir(parents=True, exist_ok=True)
    if damage == "directory":
        state.mkdir()
    elif damage == "fifo":
        os.mkfifo(state)  # opening it must not wait for a writer
    elif damage == "link":
        target = tmp_path / "elsewhere.json"
        target.write_text('{"theme": "nord", "config_theme": "textual-dark"}')
        state.symlink_to(target)  # a link is not followed
    else:
        state.write_bytes(damage)
    assert app_factory().theme == "textual-dark"


async def test_a_state_file_that_cannot_be_written_changes_nothing_but_the_next_launch(
    app_factory, tmp_path
):
    home = tmp_path / "home"
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        (home / STATE_NAME).mkdir(parents=True)  # the write fails: the theme still changes now
        await pick_theme(pilot, "nord")
        assert app.theme == "nord"
    assert app_factory().theme == "textual-dark"


async def test_going_back_to_the_configs_theme_is_kept_too(app_factory):
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pick_theme(pilot, "nord")
        await pick_theme(pilot, "textual-dark")
    assert app_factory().theme == "textual-dark"
