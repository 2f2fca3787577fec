"""The consent dialog in the app: an MCP tool not in `allow` asks before it runs
(allow once / for this thread / deny), with its arguments shown escaped; /tools lists
the servers. A real MCP server (tests/mcp_server.py) and the scripted model."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Static

from devtools import scripted_server as s
from engine import events as ev
from engine.config import parse_config
from tests.support import LIMIT, of_kind
from tests.tui.conftest import app_for, settle, type_text
from tui.screens.consent import ConsentScreen
from tui.widgets.chat_message import Notice

SERVER = str(Path(__file__).resolve().parent.parent / "mcp_server.py")


def config_for(server: Any) -> Any:
    return parse_config(
        {
            "model": {
                "base_url": server.base_url,
                "api_key": "k",
                "name": "scripted-model",
                "max_retries": 0,
            },
            "mcp": {
                "servers": {"test": {"command": sys.executable, "args": [SERVER], "allow": []}}
            },
        },
        source="test",
        env={},
    )


async def wait_state(pilot: Pilot[Any], ready: Callable[[], bool]) -> None:
    """Until `ready()` holds: the server starts in a child process, so this waits on the
    app's state across real time (bounded), not a number of ticks."""
    deadline = time.monotonic() + LIMIT * 3
    while not ready():
        assert time.monotonic() < deadline, "the app never reached the awaited state"
        await pilot.pause(0.05)


def tool_results(app: Any) -> list[ev.ToolResult]:
    return of_kind(app.runtime.thread.log.events, ev.ToolResult)


async def test_consent_allow_once_then_deny(server, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    call = s.tool_calls([("echo", {"text": "\x1b]0;pwned\x07hi"})])
    server.script(call, s.text("echoed"), call, s.text("denied then"))
    app = app_for(config_for(server), tmp_path / "home", server)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "echo it")
        await pilot.press("enter")
        await wait_state(pilot, lambda: bool(app.screen.query("#consent-args")))
        shown = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "Run echo from MCP server test?" in shown
        assert "\x1b" not in shown and "\x07" not in shown and "hi" in shown
        await pilot.press("o")
        await wait_state(pilot, lambda: len(tool_results(app)) == 1)
        await settle(pilot)
        assert tool_results(app)[0].content == "\x1b]0;pwned\x07hi"
        await type_text(pilot, "again")
        await pilot.press("enter")
        await wait_state(pilot, lambda: isinstance(app.screen, ConsentScreen))
        await pilot.press("escape")
        await wait_state(pilot, lambda: len(tool_results(app)) == 2)
        await settle(pilot)
        assert json.loads(tool_results(app)[1].content)["error"] == "denied"
        await type_text(pilot, "/tools")
        await pilot.press("enter")
        await settle(pilot)
        notices = "\n".join(str(n.text) for n in app.screen.query(Notice))
        assert "test: ready" in notices and "echo" in notices


async def test_allow_for_the_thread_asks_once(server, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    call = s.tool_calls([("add", {"a": 1, "b": 2})])
    server.script(call, call, s.text("both"))
    app = app_for(config_for(server), tmp_path / "home", server)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "add twice")
        await pilot.press("enter")
        await wait_state(pilot, lambda: isinstance(app.screen, ConsentScreen))
        await pilot.press("t")
        await wait_state(pilot, lambda: len(tool_results(app)) == 2)
        await settle(pilot)
        assert [r.content for r in tool_results(app)] == ["3", "3"]
        assert not isinstance(app.screen, ConsentScreen)
