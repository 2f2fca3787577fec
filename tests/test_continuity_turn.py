"""A scripted model recovers an archived code in one turn: search, read, cited note."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from devtools import scripted_server as s
from engine import events as ev
from engine.continuity import (
    AUTHORITY_CONTRACT,
    ContinuityContext,
    build_tools,
    context_builder,
    source_id,
)
from engine.driver import Driver
from engine.model.tools import ToolBox
from engine.workspace.reports import cli_notes
from tests.support import client_for, of_kind, opened
from tests.test_continuity_helpers import USER, compact, new_thread, say, store_for

CODE = "QX-9083-LM"


async def test_search_read_and_cited_note_in_one_turn(tmp_path: Path, server) -> None:
    home = tmp_path / "home"
    thread = new_thread(home)
    say(thread.log, f"The manifest code is {CODE}.", "Got it.")
    store = store_for(thread)
    compact(thread.log, store)
    sid = source_id("user", 1, f"The manifest code is {CODE}.")

    driver = opened(
        Driver(thread.log, client_for(server), system_prompt="sys\n\n" + AUTHORITY_CONTRACT)
    )
    ctx = ContinuityContext.for_log(
        thread.log, driver.surface, store, user_id=USER, thread_id=thread.id
    )
    driver.tools = ToolBox(build_tools(ctx))
    driver.context = context_builder(ctx)
    server.script(
        s.tool_calls([("history_search", {"query": CODE})]),
        s.tool_calls([("history_read", {"source_id": sid})]),
        s.tool_calls(
            [("task_note", {"key": "manifest", "content": f"code {CODE}", "source_ids": [sid]})]
        ),
        s.text(json.dumps({"codes": [CODE]})),
    )
    driver.send("What was the manifest code? Answer as JSON.")
    await asyncio.wait_for(driver.when_idle(), 10)

    results = [json.loads(e.content) for e in of_kind(thread.log.events, ev.ToolResult)]
    assert [e.name for e in of_kind(thread.log.events, ev.ToolResult)] == [
        "history_search",
        "history_read",
        "task_note",
    ]
    assert results[0]["status"] == "available" and results[0]["results"][0]["id"] == sid
    assert CODE in results[1]["text"]
    assert results[2]["status"] == "ok" and results[2]["notes"][0]["source_ids"] == [sid]
    # every request carried the contract in the system message and the notebook as data
    last = server.requests[-1]["messages"]
    assert AUTHORITY_CONTRACT in last[0]["content"]
    assert "TASK-CONTINUITY DATA" in last[1]["content"] and "manifest" in last[1]["content"]
    [note] = cli_notes(home, USER, thread.id)["notes"]
    assert note["citations"] == [{"id": sid, "status": "available"}]
    await driver.aclose()
    await driver.model.aclose()
    store.close()
