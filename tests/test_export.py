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


def test_a_reply_s_thinking_is_a_collapsed_block_above_its_text() -> None:
    """The Markdown shows the thinking folded (`<details>`), quoted so that a code block
    it leaves open or a `</details>` in it cannot swallow or close what follows; the JSON
    has it as the reply's `reasoning` field."""
    thought = "Step one.\n\n```py\nopen fence, cut off\n</details> in the text"
    events: list[ev.LogEvent] = [
        ev.UserMessage(text="q"),
        ev.AssistantMessage(content="The answer.", reasoning=thought, reasoning_seconds=12.4),
        ev.UserMessage(text="next"),
        ev.AssistantMessage(content="No thinking here."),
    ]
    markdown = thread_markdown("t", events)
    reply = _section(markdown, "Assistant", "<details>")
    assert reply == (
        "## Assistant\n\n<details>\n<summary>thought for 12s (59 chars)</summary>\n\n"
        "> Step one.\n>\n> ```py\n> open fence, cut off\n> &lt;/details> in the text\n\n"
        "</details>\n\nThe answer.\n"
    )
    assert "<details>" not in _section(markdown, "Assistant", "No thinking here.")


def test_the_json_export_carries_the_thinking(tmp_path: Path) -> None:
    from engine.runtime.export import export_thread

    events: list[ev.LogEvent] = [
        ev.AssistantMessage(seq=1, ts="t", content="A.", reasoning="hm", reasoning_seconds=0.5),
        ev.AssistantMessage(seq=2, ts="t", content="B."),
    ]
    (target,) = export_thread(tmp_path, "t", events, str(tmp_path / "out.json"))
    import json

    replies = json.loads(target.read_text(encoding="utf-8"))["events"]
    assert (replies[0]["reasoning"], replies[0]["reasoning_seconds"]) == ("hm", 0.5)
    assert "reasoning" not in replies[1]


def test_thinking_cut_off_before_any_text_is_exported_with_its_mark() -> None:
    events: list[ev.LogEvent] = [
        ev.UserMessage(text="q"),
        ev.AssistantMessage(content="", reasoning="half a tho", interrupted=True),
    ]
    markdown = thread_markdown("t", events)
    assert markdown.endswith(
        "<summary>thought (10 chars)</summary>\n\n> half a tho\n\n</details>\n\n"
        "_(reply cut off: the stream ended before the reply was complete)_\n"
    )
