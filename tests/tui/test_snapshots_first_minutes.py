"""Snapshots of the first minutes: the welcome screen and an expanded tool result
(issue 12, items 5 and 8; review each SVG as a PNG before accepting)."""

from __future__ import annotations

from typing import Any

from tests import scripted_server as s
from tests.tui.conftest import settle
from tui.widgets.tool_block import ToolBlock

SIZE = (100, 32)


def test_an_expanded_tool_result(snap_compare, app_factory, server):
    """A prompt, then two tool blocks: the first (task_note) expanded below its call line
    ("▼ ⚙ task_note  key: code, content: …", focused) and its result line ("✓ ok · … B ·
    key: code, …"), with "arguments" and "result" headings over the indented JSON; the second
    (history_search) collapsed to its call line and "• uninitialized · 1.0 KB · …"."""
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
