"""Tool blocks show the call and its result, collapsed to a line or two and expandable,
both live and when the thread is opened again (issue 12, item 5)."""

from __future__ import annotations

import json
from typing import Any

from textual.pilot import Pilot

from devtools import scripted_server as s
from engine import events as ev
from tests.tui.conftest import settle, until
from tests.tui.test_terminal_safety import screen_text
from tui.widgets.tool_block import MAX_LINES, ToolBlock
from tui.widgets.transcript import CHUNK, Transcript

SIZE = (100, 40)
NOTE = "the deploy code is ZEBRA-4471"


def flat(pilot: Pilot[Any]) -> str:
    return " ".join(screen_text(pilot).split())


async def expand(pilot: Pilot[Any], block: ToolBlock) -> None:
    """Expanded as a user does it: focus on the block's title line, then Enter."""
    block.focus_title()
    await pilot.press("enter")
    await pilot.pause()
    block.scroll_visible(animate=False)
    await pilot.pause()


async def test_a_live_tool_call_shows_its_result_collapsed_then_expanded(app_factory, server):
    server.script(
        s.tool_calls([("task_note", {"key": "code", "content": NOTE})]),
        s.text("Noted."),
    )
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.runtime.driver.send("remember the code")
        await settle(pilot)
        [block] = app.query(ToolBlock)
        assert block.collapsed
        shown = flat(pilot)
        assert "task_note" in shown and "key: code" in shown  # the call, in one line
        assert "✓ ok" in shown  # the result's status line is shown without expanding
        assert block.result is not None and block.result_line() in " ".join(shown.split())
        await expand(pilot, block)
        assert not block.collapsed
        assert '  "status": "ok",' in screen_text(pilot)  # the full result, JSON indented


async def test_a_resumed_thread_shows_tool_results(app_factory, server):
    server.script(
        s.tool_calls([("task_note", {"key": "code", "content": NOTE})]),
        s.text("Noted."),
    )
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.runtime.driver.send("remember the code")
        await settle(pilot)
        live_line = app.query_one(ToolBlock).result_line()
        thread = app.runtime.thread.id
    again = app_factory()
    again.start_thread = thread
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [block] = again.query(ToolBlock)
        assert block.result_line() == live_line
        assert live_line in flat(pilot)
        await expand(pilot, block)
        assert NOTE in flat(pilot)


async def test_an_error_result_says_so_collapsed(app_factory, server):
    server.script(s.tool_calls([("no_such_tool", {"x": 1})]), s.text("Sorry."))
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.runtime.driver.send("call something")
        await settle(pilot)
        assert "✗ error: unknown_tool" in flat(pilot)


async def test_a_huge_result_is_bounded_with_a_note(app_factory, server, tmp_path):
    """Written straight to the log (a tool may return anything): the expanded view shows the
    first MAX_LINES lines and says how many more there are."""
    from engine.threads.thread import Thread

    lines = [f"line {i}" for i in range(MAX_LINES + 500)]
    thread = Thread.create(tmp_path / "home", "local", "t-huge")
    thread.log.append(ev.UserMessage(text="dump it"))
    thread.log.append(
        ev.AssistantMessage(
            content="", tool_calls=[ev.ToolCall(id="c1", name="dump", arguments="{}")]
        )
    )
    thread.log.append(ev.ToolResult(call_id="c1", content="\n".join(lines)))
    thread.close()
    app = app_factory()
    app.start_thread = "t-huge"
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        block = app.query_one(ToolBlock)
        assert block.result_line().startswith("✓")
        await expand(pilot, block)
        body = block.body_text()
        assert f"line {MAX_LINES - 1}" in body and f"line {MAX_LINES}\n" not in body
        assert "500 more lines" in body


async def test_a_result_in_a_later_chunk_than_its_call_is_matched_by_id(
    app_factory, server, tmp_path
):
    """The call is just before the newest CHUNK events, its result inside them: loading the
    earlier events builds the call's block with the result already attached."""
    from engine.threads.thread import Thread

    thread = Thread.create(tmp_path / "home", "local", "t-split")
    thread.log.append(ev.UserMessage(text="look it up"))
    thread.log.append(
        ev.AssistantMessage(
            content="",
            tool_calls=[ev.ToolCall(id="c9", name="history_search", arguments='{"query": "x"}')],
        )
    )
    thread.log.append(ev.ToolResult(call_id="c9", content=json.dumps({"status": "ok", "n": 3})))
    for i in range(CHUNK - 1):
        thread.log.append(ev.UserMessage(text=f"filler {i}"))
    thread.close()
    app = app_factory()
    app.start_thread = "t-split"
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.query(ToolBlock)
        app.query_one(Transcript).load_earlier()
        await settle(pilot)  # the window grows a slice a frame
        block = app.query_one(ToolBlock)
        assert block.result is not None and block.result_line().startswith("✓ ok")


def test_summaries_are_one_safe_line_and_the_full_view_is_bounded():
    from tui.widgets.tool_summary import MAX_CHARS, call_line, full_text, result_line

    assert call_line("history_search", '{"query": "a\\nb", "limit": 3}') == (
        "⚙ history_search  query: a b, limit: 3"
    )
    assert call_line("t\x1b[2Jx", "not json") == "⚙ tx  not json"
    assert result_line("first line\nsecond") == "✓ · 17 B · first line"
    assert result_line('{"status": "error", "error": "bad", "message": "no"}').startswith(
        "✗ error: bad — no"
    )
    huge = full_text("x" * (MAX_CHARS * 5))
    assert len(huge) < MAX_CHARS + 200 and "more characters not shown" in huge


async def steady(pilot: Any, widget: Any) -> None:
    """Until `widget` stays where it is across three frames: a click aims at where it is
    drawn, and the block takes only a click on its first row. (After a turn the
    transcript sometimes still moves a row once `settle` returns; the cause is not found.)"""
    seen: list[Any] = []

    def held() -> bool:
        seen.append(widget.region)
        return len(seen) >= 3 and seen[-1] == seen[-2] == seen[-3]

    await until(pilot, held)


async def test_a_click_on_the_call_line_toggles_the_block_and_one_below_it_does_not(
    app_factory, server
):
    server.script(s.tool_calls([("task_note", {"key": "code", "content": NOTE})]), s.text("Ok."))
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.runtime.driver.send("remember the code")
        await settle(pilot)
        block = app.query_one(ToolBlock)
        await steady(pilot, block)
        await pilot.click(ToolBlock, offset=(4, 0))
        await until(pilot, lambda: not block.collapsed)  # the click is handled in its turn
        assert block.has_focus
        assert '  "status": "ok",' in screen_text(pilot)
        await pilot.click(ToolBlock, offset=(4, 3))  # inside the expanded view
        await pilot.pause()
        assert not block.collapsed
        await pilot.click(ToolBlock, offset=(4, 0))
        await pilot.pause()
        assert block.collapsed
        assert '"status": "ok",' not in screen_text(pilot)


async def test_the_call_line_follows_focus_and_the_theme(app_factory, server):
    """The block keeps its styles between layouts; focus, blur and a new theme draw its
    lines with the styles of now, as a block drawn afresh draws them."""
    server.script(s.tool_calls([("task_note", {"key": "code", "content": NOTE})]), s.text("Ok."))
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.runtime.driver.send("remember the code")
        await settle(pilot)
        block = app.query_one(ToolBlock)

        def afresh(y: int) -> object:
            kept = block._drawn, block._styles
            block._drawn = block._styles = None
            line = block.render_line(y)
            block._drawn, block._styles = kept
            return line

        unfocused = block.render_line(0)
        assert unfocused == afresh(0)
        block.focus_title()
        await until(pilot, lambda: block.has_focus and block.render_line(0) != unfocused)
        assert block.render_line(0) == afresh(0)
        app.screen.focus_next()
        await until(pilot, lambda: not block.has_focus and block.render_line(0) == unfocused)
        summary = block.render_line(1)
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        await until(pilot, lambda: block.render_line(1) != summary)
        assert block.render_line(1) == afresh(1)
