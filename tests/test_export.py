"""Exports mark what a reader must not take at face value: a reply the user cancelled, a
reply the stream cut off, and a steer (text that reached the model mid-turn)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import parse_config
from engine.model.tools import ToolBox
from engine.runtime import Runtime
from engine.runtime.export import thread_markdown
from tests.support import LIMIT, client_for, echo_tool, first_delta, opened


def _section(markdown: str, heading: str, text: str) -> str:
    """The Markdown from the `## heading` whose body starts with `text` to the next heading."""
    start = markdown.index(f"## {heading}\n\n{text}")
    end = markdown.find("\n## ", start + 1)
    return markdown[start : end if end >= 0 else None]


async def test_export_marks_a_steer_a_cancelled_and_a_cut_off_reply(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(
        s.tool_calls([("echo", {"text": "x"})]),
        s.text("Before the steer.", hold="before"),
        s.text("Steered answer."),
        s.text("Stopped mid|way", chunk_chars=8, hold=True),
        s.reset(after_chunks=2),
    )
    config = parse_config(
        {"model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0}},
        source="test",
        env={},
    )
    runtime = opened(Runtime.open(config, tmp_path, model=client_for(server)))
    driver = runtime.driver
    driver.tools = ToolBox([echo_tool()])
    # A steer: sent while the turn's second request is held, so a third one carries it.
    driver.send("start")
    await server.wait_requests(2)
    assert (await runtime.commands.run("/steer mention pong")).ok
    server.release()
    await asyncio.wait_for(driver.when_idle(), LIMIT)
    # A cancelled reply: its first piece arrived, then the user stopped it.
    driver.send("second")
    await first_delta(driver)
    assert driver.cancel()
    await asyncio.wait_for(driver.when_idle(), LIMIT)
    server.release()
    # A reply cut off: the connection broke mid-reply.
    driver.send("third")
    await asyncio.wait_for(driver.when_idle(), LIMIT)
    replies = [e for e in runtime.thread.log.events if isinstance(e, ev.AssistantMessage)]
    assert [(r.cancelled, r.interrupted) for r in replies[-2:]] == [(True, False), (False, True)]

    result = await runtime.commands.run("/export")
    assert result.ok, result.text
    markdown = (tmp_path / "exports" / f"{runtime.thread.id}.md").read_text(encoding="utf-8")

    assert "## User\n\n**Steer:** mention pong\n" in markdown
    for prompt in ("start", "second", "third"):
        assert f"## User\n\n{prompt}\n" in markdown  # a prompt of its own is no steer
    assert "_(reply" not in _section(markdown, "Assistant", "Steered answer.")
    cancelled = _section(markdown, "Assistant", "Stopped ")
    assert cancelled == "## Assistant\n\nStopped \n\n_(reply cancelled)_\n"
    cut = _section(markdown, "Assistant", "partial partial ")
    assert cut.startswith("## Assistant\n\npartial partial \n\n_(reply cut off: ")
    assert "mid-reply" in cut and cut.endswith(")_\n")  # the turn's own error says why
    assert "cancelled" not in cut


def test_a_reply_cut_off_with_no_turn_end_is_still_marked() -> None:
    """A crash after the partial reply was kept leaves no `turn/end` to quote: the mark
    stands on the reply's own flag."""
    events: list[ev.LogEvent] = [
        ev.UserMessage(text="q"),
        ev.AssistantMessage(content="half an", interrupted=True),
    ]
    markdown = thread_markdown("t", events)
    assert markdown.endswith(
        "## Assistant\n\nhalf an\n\n_(reply cut off: the stream ended before the reply was"
        " complete)_\n"
    )
