"""Ctrl+Y (and /copy, and Ctrl+C on a selection) never run the clipboard tool on the UI
loop: the keys go on being read while it runs, and its answer comes as one toast."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from devtools import scripted_server as s
from tests.support import LIMIT
from tests.tui.conftest import say, settle, type_text
from tui.widgets.prompt_input import PromptInput

CAT = shutil.which("cat")
TOUCH = shutil.which("touch")
SLEEP = shutil.which("sleep")


def _slow_tool(bin_dir: Path, name: str, status: int, place: Path) -> None:
    """A clipboard tool on PATH that says it started, then waits for the test to let it
    go (a file appears) before it takes its input and exits with `status`."""
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / name
    tool.write_text(
        "#!/bin/sh\n"
        f"{TOUCH} '{place / 'started'}'\n"
        f"while [ ! -e '{place / 'release'}' ]; do {SLEEP} 0.01; done\n"
        f"{CAT} > '{place / 'sink'}'\n"
        f"exit {status}\n",
        encoding="utf-8",
    )
    tool.chmod(0o755)


def _toasts(app: Any) -> list[str]:
    return [n.message for n in app._notifications]


async def _until(pilot: Any, ready: Any) -> None:
    """Let the app run until `ready()` holds: a child process is waited for, so the wait
    is bounded by time (LIMIT), not by rounds of the loop."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIMIT
    while not ready():
        assert loop.time() < deadline, "the app never reached the awaited state"
        await pilot.pause(0.01)


async def _copy_with_the_loop_free(app: Any, pilot: Any, place: Path, keys: list[str]) -> None:
    """Press `keys`; while the tool runs, a key typed reaches the prompt."""
    await pilot.press(*keys)
    await _until(pilot, (place / "started").exists)
    await type_text(pilot, "x")
    await _until(pilot, lambda: app.query_one(PromptInput).text.endswith("x"))
    assert not (place / "sink").exists()  # the tool still waits: the loop was not blocked
    (place / "release").touch()


async def test_ctrl_y_runs_the_clipboard_tool_off_the_loop(
    app_factory: Any, server: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    place = tmp_path / "tool"
    place.mkdir()
    _slow_tool(tmp_path / "bin", "xclip", 0, place)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    server.script(s.text("the reply to copy"))
    app = app_factory()
    async with app.run_test(size=(100, 32), notifications=True) as pilot:
        await settle(pilot)
        await say(pilot, "hi")
        await _copy_with_the_loop_free(app, pilot, place, ["ctrl+y"])
        done = "Copied the last reply to the system clipboard (xclip)."
        await _until(pilot, lambda: done in _toasts(app))
        assert (place / "sink").read_text(encoding="utf-8") == "the reply to copy"
        assert app.clipboard == "the reply to copy"  # OSC 52 went out at once, too


async def test_a_clipboard_tool_that_fails_is_said_in_one_toast(
    app_factory: Any, server: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    place = tmp_path / "tool"
    place.mkdir()
    _slow_tool(tmp_path / "bin", "xclip", 1, place)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    server.script(s.text("the reply to copy"))
    app = app_factory()
    async with app.run_test(size=(100, 32), notifications=True) as pilot:
        await settle(pilot)
        await say(pilot, "hi")
        await _copy_with_the_loop_free(app, pilot, place, ["ctrl+y"])
        await _until(pilot, lambda: any("OSC 52" in t for t in _toasts(app)))
        (toast,) = [t for t in _toasts(app) if "OSC 52" in t]
        assert "\n" not in toast and not toast.startswith("Copied")
        assert "may ignore it" in toast
