"""Snapshots of the first minutes: the welcome screen and an expanded tool result
(issue 12, items 5 and 8; review each SVG as a PNG before accepting)."""

from __future__ import annotations

from typing import Any

from devtools import scripted_server as s
from tests.tui.conftest import settle
from tests.tui.test_welcome import offline_app
from tui.widgets.tool_block import ToolBlock

SIZE = (100, 32)


def test_an_expanded_tool_result(snap_compare, app_factory, server):
    """A prompt, then two tool blocks: the first (task_note) expanded below its call line
    ("▼ ⚙ task_note  key: code, content: …", focused) and its result line ("✓ ok · … B ·
    key: code, …"), with "arguments" and "result" headings over the indented JSON; the second
    (history_search) collapsed to its call line and "• uninitialized · 1.1 KB · …"."""
    server.script(
        s.tool_calls(
            [
                ("task_note", {"key": "code", "content": "the deploy code is ZEBRA-4471"}),
                ("history_search", {"query": "deploy code"}),
            ]
        ),
        s.text("Noted."),
    )

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.runtime.driver.send("remember the deploy code")
        await settle(pilot)
        block = list(pilot.app.query(ToolBlock))[0]
        block.focus_title()
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=run_before)


def test_the_welcome_screen_with_the_offline_model(snap_compare, server, tmp_path, monkeypatch):
    """A new thread with the bundled offline model: the header "local · SmolLM2-135M ·
    offline", the welcome line (model, "~/home/users/local/threads/t-snapshot", Enter / Esc /
    F1), the yellow note that this is the tiny offline model and which environment variables
    or config.yaml keys connect a real one, and the prompt's placeholder "Message SmolLM2-135M —
    Enter to send, F1 for help"."""
    monkeypatch.setenv("HOME", str(tmp_path))  # as app_factory does: the data dir is ~/home

    async def run_before(pilot: Any) -> None:
        await settle(pilot)

    app = offline_app(tmp_path / "home", server)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
