"""MCP tools end to end: a real MCP server (tests/mcp_server.py, written with the SDK)
over stdio and streamable HTTP, called by the scripted model through a Runtime."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import parse_config
from engine.mcp import ConsentRequest
from engine.runtime import Runtime
from tests.support import LIMIT, client_for, of_kind, opened

SERVER = str(Path(__file__).with_name("mcp_server.py"))


def stdio_config(*extra: str, allow: tuple[str, ...] = ("echo", "add"), name: str = "test"):
    data: dict[str, Any] = {
        "mcp": {
            "servers": {
                name: {"command": sys.executable, "args": [SERVER, *extra], "allow": list(allow)}
            }
        }
    }
    return parse_config(data, source="test", env={})


class Front:
    """A front end that answers consent questions from a list, and records them."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[ConsentRequest] = []

    def open_thread(self, thread_id: str | None) -> None: ...

    def quit(self) -> None: ...

    def actions(self) -> list:
        return []

    async def ask_consent(self, request: ConsentRequest) -> str:
        self.asked.append(request)
        return self.answers.pop(0)


async def run_turn(rt: Runtime, prompt: str) -> None:
    rt.driver.send(prompt)
    await asyncio.wait_for(rt.driver.when_idle(), LIMIT * 3)


def open_runtime(tmp_path: Path, server: ScriptedServer, config, front=None) -> Runtime:
    return opened(Runtime.open(config, tmp_path, model=client_for(server), front_end=front))


async def test_the_model_calls_an_allowed_stdio_tool(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(s.tool_calls([("add", {"a": 2, "b": 40})]), s.text("it is 42"))
    rt = open_runtime(tmp_path, server, stdio_config())
    assert rt.mcp is not None and rt.mcp.servers["test"].state == "stopped"  # not at launch
    await run_turn(rt, "add them")
    results = of_kind(rt.thread.log.events, ev.ToolResult)
    assert [(r.name, r.server, r.content) for r in results] == [("add", "test", "42")]
    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert {"echo", "add", "crash", "hang", "huge", "hostile"} <= offered
    assert "history_read" in offered  # Trove's own tools are still there
    # The result went to the model as the tool's text.
    tool_msgs = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_msgs[-1]["content"] == "42"
    listing = (await rt.commands.run("/tools")).text
    assert "test: ready" in listing and "add" in listing


async def test_consent_once_thread_and_deny(tmp_path: Path, server: ScriptedServer) -> None:
    call = s.tool_calls([("hostile", {})])
    server.script(call, call, s.text("ok"))
    front = Front("deny", "thread")
    rt = open_runtime(tmp_path, server, stdio_config(), front)
    await run_turn(rt, "first")
    results = of_kind(rt.thread.log.events, ev.ToolResult)
    denied = json.loads(results[0].content)
    assert denied["error"] == "denied" and "declined" in denied["message"]
    assert results[1].content.startswith("before\x1b[2J")  # the log keeps it as it came
    assert [r.tool for r in front.asked] == ["hostile", "hostile"]
    assert front.asked[0].server == "test" and front.asked[0].arguments == "{}"
    # Allowed for the thread: the next call asks no more.
    server.script(call, s.text("again"))
    await run_turn(rt, "second")
    assert len(front.asked) == 2
    assert len(of_kind(rt.thread.log.events, ev.ToolResult)) == 3


async def test_without_a_consent_hook_an_unallowed_tool_is_denied(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(s.tool_calls([("echo", {"text": "\x1b[31mx"})]), s.text("done"))
    rt = open_runtime(tmp_path, server, stdio_config(allow=()))
    await run_turn(rt, "go")
    (result,) = of_kind(rt.thread.log.events, ev.ToolResult)
    assert json.loads(result.content)["error"] == "denied"


async def test_arguments_shown_for_consent_are_escaped(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(s.tool_calls([("echo", {"text": "\x1b]0;title\x07\x1b[2J"})]), s.text("ok"))
    front = Front("once")
    rt = open_runtime(tmp_path, server, stdio_config(allow=()), front)
    await run_turn(rt, "go")
    shown = front.asked[0].arguments
    assert "\x1b" not in shown and "\x07" not in shown
    (result,) = of_kind(rt.thread.log.events, ev.ToolResult)
    assert result.content == "\x1b]0;title\x07\x1b[2J"
