"""MCP tools from the command line: -p runs only allowed tools (one stderr line for each
denial); --plain asks y/n before any other. A real MCP server (tests/mcp_server.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.log import Event, read_events
from tests.cli_support import Env, trove
from tests.support import of_kind

SERVER = str(Path(__file__).with_name("mcp_server.py"))


def add_server(env: Env, allow: str = "[add]") -> None:
    with env.config.open("a", encoding="utf-8") as f:
        f.write(
            "mcp:\n  servers:\n    test:\n"
            f"      command: {sys.executable}\n"
            f"      args: [{SERVER}]\n"
            f"      allow: {allow}\n"
        )


def events(env: Env) -> list[Event]:
    (path,) = sorted((env.home / "users" / "local" / "threads").glob("*/session.jsonl"))
    return read_events(path).events


def test_prompt_mode_runs_an_allowed_tool(env: Env, server: ScriptedServer) -> None:
    add_server(env)
    server.script(s.tool_calls([("add", {"a": 1, "b": 2})]), s.text("three"))
    result = trove("-p", "add", *env.common)
    assert result.returncode == 0, result.stderr
    assert "three" in result.stdout
    (tool,) = of_kind(events(env), ev.ToolResult)
    assert (tool.server, tool.content) == ("test", "3")


def test_prompt_mode_denies_a_tool_not_allowed_with_one_line(
    env: Env, server: ScriptedServer
) -> None:
    add_server(env)
    server.script(s.tool_calls([("echo", {"text": "hi"})]), s.text("I could not"))
    result = trove("-p", "echo", *env.common)
    assert result.returncode == 0, result.stderr
    denials = [line for line in result.stderr.splitlines() if "denied echo" in line]
    assert denials == [
        "trove: denied echo from MCP server test: -p runs only the tools in mcp.servers.test.allow"
    ]
    (tool,) = of_kind(events(env), ev.ToolResult)
    assert json.loads(tool.content)["error"] == "denied"


def test_plain_mode_asks_and_runs_on_yes(env: Env, server: ScriptedServer) -> None:
    add_server(env)
    server.script(s.tool_calls([("hostile", {})]), s.text("done"))
    result = trove("--plain", *env.common, stdin="show me\ny\n")
    assert "Run hostile from MCP server test with {}? [y/N]" in result.stdout
    (tool,) = of_kind(events(env), ev.ToolResult)
    assert tool.content.startswith("before\x1b[2J")  # whole in the log
    assert "\x1b[2J" not in result.stdout + result.stderr  # never on the terminal
    assert "\x1b]0;" not in result.stdout + result.stderr


def test_plain_mode_denies_on_no(env: Env, server: ScriptedServer) -> None:
    add_server(env)
    server.script(s.tool_calls([("echo", {"text": "x"})]), s.text("fine"))
    trove("--plain", *env.common, stdin="echo it\nn\n")
    (tool,) = of_kind(events(env), ev.ToolResult)
    assert json.loads(tool.content)["error"] == "denied"
