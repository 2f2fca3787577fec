"""Issue 13, rewind, through the assembled TUI: Esc Esc and /rewind, the model's view follows."""

from __future__ import annotations

import json
from typing import Any

from textual.widgets import OptionList

from devtools import scripted_server as s
from engine import events as ev
from tests.support import of_kind
from tests.tui.conftest import say, settle, type_text, until
from tui.inspector.batches_tab import BatchesTab
from tui.screens.rewind import RewindScreen
from tui.widgets.chat_message import Notice
from tui.widgets.prompt_input import PromptInput
from tui.widgets.transcript import Transcript

ONE = "ALPHA-1111"
TWO = "BRAVO-2222"


def found(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Hits other than the search's own call (which the active history also holds)."""
    return [hit for hit in result["results"] if not hit.get("echo")]


def searches(app: Any) -> list[dict[str, Any]]:
    """The model's history_search results of the newest turn, in order."""
    log = app.runtime.thread.log
    start = of_kind(log.events, ev.TurnStart)[-1].seq
    return [
        json.loads(r.content)
        for r in of_kind(log.events, ev.ToolResult)
        if r.seq > start and r.name == "history_search"
    ]


async def batches_shown(pilot: Any) -> list[str]:
    """Open the inspector, read the states its Batches tab lists (newest batch first) once
    it has read them, close it. A batch the position cannot reach is listed "unlinked"."""
    await pilot.press("ctrl+o")
    tab = pilot.app.query_one(BatchesTab)
    await until(
        pilot, lambda: not [w for w in pilot.app.workers if w.node is tab and not w.is_finished]
    )
    await settle(pilot)
    rows = [row.state for row in tab.rows]
    await pilot.press("ctrl+o")
    await settle(pilot)
    return rows


async def pick(pilot: Any, *keys: str) -> None:
    await until(pilot, lambda: isinstance(pilot.app.screen, RewindScreen))
    await pilot.press(*keys, "enter")
    await until(pilot, lambda: not isinstance(pilot.app.screen, RewindScreen))
    await settle(pilot)


async def test_rewinding_twice_changes_what_the_model_finds(app_factory, server):
    server.script(
        s.text("Noted."),
        s.text("A summary that names no code."),
        s.text("Noted too."),
        s.text("Another summary without codes."),
        s.text("Fine."),
    )
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, f"code one is {ONE}")
        await say(pilot, "/compact")
        await say(pilot, f"code two is {TWO}")
        await say(pilot, "/compact")
        await say(pilot, "third prompt")
        log = app.runtime.thread.log
        assert len(of_kind(log.events, ev.CompactEnd)) == 2

        # Esc Esc on the empty prompt: the picker, newest first; the second goes back
        # to just before the second code (after the first compaction, before the second).
        await pilot.press("escape", "escape")
        await until(pilot, lambda: isinstance(app.screen, RewindScreen))
        listed = app.screen.query_one(OptionList)
        assert listed.option_count == 3
        await pick(pilot, "down")
        prompt = app.query_one(PromptInput)
        assert prompt.text == f"code two is {TWO}"  # ready to edit and send
        shown = app.query_one(Transcript).events
        assert not any(TWO in getattr(e, "text", "") for e in shown)
        assert len(of_kind(log.events, ev.CompactEnd)) == 1
        # The inspector is at the same position: the second batch is not reachable from it.
        assert await batches_shown(pilot) == ["unlinked", "reachable"]

        await pilot.press("ctrl+c")  # the prefilled text goes; Up would bring it back
        server.script(
            s.tool_calls([("history_search", {"query": TWO})]),
            s.tool_calls([("history_search", {"query": ONE})]),
            s.text("Only the first code is still on record."),
        )
        await say(pilot, "what were the codes?")
        second, first = searches(app)
        assert found(second) == []
        assert first["status"] == "available" and ONE in found(first)[0]["excerpt"]

        # /rewind opens the same picker; the oldest prompt is last: before anything.
        await type_text(pilot, "/rewind")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RewindScreen))
        assert app.screen.query_one(OptionList).option_count == 4  # the branch's too
        await pick(pilot, "end")
        assert prompt.text == f"code one is {ONE}"
        assert of_kind(log.events, ev.CompactEnd) == []
        await pilot.press("ctrl+c")
        server.script(
            s.tool_calls([("history_search", {"query": ONE})]),
            s.text("Nothing on record."),
        )
        await say(pilot, "anything?")
        (nothing,) = searches(app)
        assert nothing["status"] == "uninitialized" and found(nothing) == []
        # The inspector reads the same position as the model: no batch is reachable.
        assert await batches_shown(pilot) == ["unlinked", "unlinked"]
        # Nothing was deleted: every prompt is still in the log.
        said = [e.text for e in of_kind(log.file_events, ev.UserMessage) if e.item_id]
        assert f"code two is {TWO}" in said and "third prompt" in said


async def test_rewind_is_refused_while_a_reply_runs(app_factory, server):
    server.script(s.text("first"), s.text("held", hold=True))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "one")
        await type_text(pilot, "two")
        await pilot.press("enter")
        await server.wait_requests(2)
        await type_text(pilot, "/rewind 1")
        await pilot.press("enter")
        await until(pilot, lambda: any("reply runs" in n.text for n in app.query(Notice)))
        assert not of_kind(app.runtime.thread.log.file_events, ev.SessionRewind)
        server.release()
        await settle(pilot)
        # Idle again: /rewind 1 goes back before "two" and puts it in the input.
        await type_text(pilot, "/rewind 1")
        await pilot.press("enter")
        await settle(pilot)
        assert app.query_one(PromptInput).text == "two"
        assert [e.text for e in of_kind(app.runtime.thread.log.events, ev.UserMessage)] == ["one"]
