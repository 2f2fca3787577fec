"""MCP tools end to end: a real MCP server (tests/mcp_server.py, written with the SDK)
over stdio and streamable HTTP, called by the scripted model through a Runtime."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import parse_config
from engine.continuity.tools import read_result
from engine.log.line_codec import decode_line, encode_line
from engine.mcp import ConsentRequest
from engine.port import LogAppended
from engine.runtime import Runtime
from engine.util.tool_cut import TOOL_RESULT_CONTEXT_CHARS, source_id
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
    (call,) = of_kind(rt.thread.log.events, ev.AssistantMessage)[0].calls
    assert (call.name, call.server) == ("add", "test")
    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert {"echo", "add", "crash", "hang", "huge", "hostile"} <= offered
    assert "history_read" in offered  # Trove's own tools are still there
    # The result went to the model as the tool's text.
    tool_msgs = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_msgs[-1]["content"] == "42"
    listing = (await rt.commands.run("/tools")).text
    assert "test: ready" in listing and "add" in listing


def test_old_tool_events_decode_and_new_ones_carry_the_server() -> None:
    old = b'{"kind":"tool/result","seq":3,"call_id":"c1","content":"x","name":"echo"}'
    event = decode_line(old)
    assert isinstance(event, ev.ToolResult) and event.server is None
    new = ev.ToolResult(seq=4, call_id="c1", content="x", name="add", server="time")
    line, _ = encode_line(new)
    assert decode_line(line.strip()) == new
    assert b"server" not in msgspec.json.encode(ev.ToolCall("c", "history_read"))


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


# -- sizes ---------------------------------------------------------------------------


async def test_a_huge_result_is_cut_in_the_context_and_whole_in_the_log(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(s.tool_calls([("huge", {"chars": 200_000})]), s.text("that was long"))
    rt = open_runtime(tmp_path, server, stdio_config(allow=("huge",)))
    await run_turn(rt, "big")
    (result,) = of_kind(rt.thread.log.events, ev.ToolResult)
    assert len(result.content) == 200_000  # whole in the log
    sent = [m for m in server.requests[1]["messages"] if m["role"] == "tool"][-1]["content"]
    sid = source_id("tool", result.seq, result.content)
    assert sent.startswith(result.content[:TOOL_RESULT_CONTEXT_CHARS])
    assert len(sent) < TOOL_RESULT_CONTEXT_CHARS + 400
    assert f"history_read with source_id {sid}" in sent
    # The id the note names reads on from where the context stopped.
    context = rt.continuity
    assert context is not None
    page = read_result(context.snapshot(), {"source_id": sid, "offset": TOOL_RESULT_CONTEXT_CHARS})
    assert page["text"] == result.content[TOOL_RESULT_CONTEXT_CHARS:][: len(page["text"])]
    assert page["chars"] == 200_000 and not page["truncated"]


async def test_two_hundred_tools_are_all_offered(tmp_path: Path, server: ScriptedServer) -> None:
    server.script(s.tool_calls([("t199", {"x": "y"})]), s.text("ok"))
    rt = open_runtime(tmp_path, server, stdio_config("--tools", "200", allow=("t199",)))
    await run_turn(rt, "many")
    offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert {f"t{i:03d}" for i in range(200)} <= set(offered)
    (result,) = of_kind(rt.thread.log.events, ev.ToolResult)
    assert result.content == "t199:y"
    listing = (await rt.commands.run("/tools")).text
    assert "206 tools" in listing


async def test_two_servers_with_the_same_tool_are_prefixed(
    tmp_path: Path, server: ScriptedServer
) -> None:
    data = {
        "mcp": {
            "servers": {
                "one": {"command": sys.executable, "args": [SERVER], "allow": ["add"]},
                "two": {"command": sys.executable, "args": [SERVER], "allow": ["add"]},
            }
        }
    }
    server.script(s.tool_calls([("two__add", {"a": 1, "b": 1})]), s.text("2"))
    rt = open_runtime(tmp_path, server, parse_config(data, source="t", env={}))
    await run_turn(rt, "add")
    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert {"one__add", "two__add", "one__echo"} <= offered and "add" not in offered
    (result,) = of_kind(rt.thread.log.events, ev.ToolResult)
    assert (result.server, result.content) == ("two", "2")


# -- faults --------------------------------------------------------------------------


async def test_a_server_that_dies_mid_call_is_reported_once_and_restarted(
    tmp_path: Path, server: ScriptedServer
) -> None:
    crash = s.tool_calls([("crash", {})])
    server.script(crash, s.text("it died"))
    rt = open_runtime(tmp_path, server, stdio_config(allow=("crash", "add")))
    await run_turn(rt, "crash it")
    (result,) = of_kind(rt.thread.log.events, ev.ToolResult)
    failure = json.loads(result.content)
    assert failure["error"] == "server_failed" and "stopped during the call" in failure["message"]
    assert "crashing now" in failure["message"]  # the server's stderr tail
    listing = (await rt.commands.run("/tools")).text
    assert "test: failed" in listing and "crashing now" in listing
    # The next call starts it again.
    server.script(s.tool_calls([("add", {"a": 5, "b": 5})]), s.text("10"))
    await run_turn(rt, "again")
    assert of_kind(rt.thread.log.events, ev.ToolResult)[-1].content == "10"
    assert rt.mcp is not None and rt.mcp.servers["test"].state == "ready"


async def test_a_hanging_tool_is_cancelled_with_the_turn(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(s.tool_calls([("hang", {})]), s.text("never sent"))
    rt = open_runtime(tmp_path, server, stdio_config(allow=("hang",)))
    called = asyncio.Event()
    rt.subscribe(
        lambda n: (
            called.set()
            if isinstance(n, LogAppended) and isinstance(n.event, ev.AssistantMessage)
            else None
        )
    )
    rt.driver.send("hang")
    await asyncio.wait_for(called.wait(), LIMIT * 3)
    assert rt.driver.cancel()
    await asyncio.wait_for(rt.driver.when_idle(), LIMIT)
    end = of_kind(rt.thread.log.events, ev.TurnEnd)[-1]
    assert end.status == "cancelled"
    (result,) = of_kind(rt.thread.log.events, ev.ToolResult)
    assert result.content == "error: cancelled" and result.server is None


async def test_a_server_that_cannot_start_says_why(tmp_path: Path, server: ScriptedServer) -> None:
    data = {"mcp": {"servers": {"gone": {"command": str(tmp_path / "no-such-program")}}}}
    server.script(s.text("no tools"))
    rt = open_runtime(tmp_path, server, parse_config(data, source="t", env={}))
    await run_turn(rt, "hello")
    assert of_kind(rt.thread.log.events, ev.TurnEnd)[-1].status == "ok"
    listing = (await rt.commands.run("/tools")).text
    assert "gone: failed" in listing and "no-such-program" in listing


async def test_over_streamable_http(tmp_path: Path, server: ScriptedServer) -> None:
    port = free_port()
    child = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await wait_listening(port)
        data = {
            "mcp": {
                "servers": {
                    "web": {
                        "url": f"http://127.0.0.1:{port}/mcp",
                        "headers": {"Authorization": "Bearer ${TOKEN}"},
                        "allow": ["add"],
                    }
                }
            }
        }
        config = parse_config(data, source="t", env={"TOKEN": "abc"})
        server.script(s.tool_calls([("add", {"a": 20, "b": 22})]), s.text("42"))
        rt = open_runtime(tmp_path, server, config)
        await run_turn(rt, "add over http")
        (result,) = of_kind(rt.thread.log.events, ev.ToolResult)
        assert (result.server, result.content) == ("web", "42")
        await rt.aclose()
    finally:
        child.kill()
        child.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_listening(port: int) -> None:
    """Until the HTTP server accepts connections (bounded)."""
    async with asyncio.timeout(LIMIT * 2):
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            return


async def test_a_huge_result_compacted_away_is_still_read_whole(
    tmp_path: Path, server: ScriptedServer
) -> None:
    config = stdio_config(allow=("huge",))
    config = msgspec.structs.replace(
        config,
        compaction=msgspec.structs.replace(config.compaction, keep_recent_tokens=0),
    )
    server.script(s.tool_calls([("huge", {"chars": 60_000})]), s.text("long"))
    rt = open_runtime(tmp_path, server, config)
    await run_turn(rt, "big")
    (result,) = of_kind(rt.thread.log.events, ev.ToolResult)
    server.script(s.text("a summary of the long result"))
    done = await rt.commands.run("/compact")
    assert done.ok, done.text
    context = rt.continuity
    assert context is not None
    sid = source_id("tool", result.seq, result.content)
    assert all(e.seq != result.seq for e in rt.driver.surface.entries)  # compacted away
    page = read_result(context.snapshot(), {"source_id": sid, "offset": 50_000})
    assert page["origin"] == "archive" and not page["truncated"]
    assert page["chars"] == 60_000
    assert page["text"] == result.content[50_000:][: len(page["text"])]
