"""`trove --plain` has the thread commands too: /fork, /export, /new, /threads.

They are the engine's commands (engine.runtime.builtin), so the REPL and the
TUI cannot drift apart; the REPL is the front end that switches threads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.log import Event, read_events
from engine.log.line import current_line
from tests.cli_support import Env, trove


def _threads(home: Path) -> dict[str, list[Event]]:
    logs = (home / "users" / "local" / "threads").glob("*/session.jsonl")
    return {log.parent.name: read_events(log).events for log in logs}


def _prompts(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, ev.UserMessage) and e.checkpoint is None]


def test_export_writes_markdown_and_json(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("Paris is the capital."))
    result = trove("--plain", *env.common, stdin="capital of France?\n/export\n")
    assert result.returncode == 0, result.stderr
    (thread_id,) = _threads(env.home)
    markdown = env.home / "exports" / f"{thread_id}.md"
    raw = env.home / "exports" / f"{thread_id}.json"
    assert f"Exported to {markdown} and {raw}" in result.stdout
    text = markdown.read_text()
    assert text.startswith(f"# Trove thread {thread_id}")
    assert "## User\n\ncapital of France?" in text
    assert "## Assistant\n\nParis is the capital." in text
    assert json.loads(raw.read_text())["thread"] == thread_id
    assert oct(markdown.stat().st_mode & 0o777) == "0o600"


def test_fork_switches_to_a_copy_and_goes_on_there(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("first answer"), s.text("answer in the fork"))
    result = trove("--plain", *env.common, stdin="first question\n/fork\nin the fork\n")
    assert result.returncode == 0, result.stderr
    child = re.search(r"Forked into thread (\S+)\.", result.stdout)
    assert child, result.stdout
    threads = _threads(env.home)
    assert len(threads) == 2 and child[1] in threads
    (parent,) = set(threads) - {child[1]}
    assert f"[thread {child[1]}]" in result.stderr
    assert _prompts(threads[parent]) == ["first question"]
    assert _prompts(threads[child[1]]) == ["first question", "in the fork"]
    # The fork's request carries the parent's conversation.
    users = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "user"]
    assert users[-2:] == ["first question", "in the fork"]


def test_new_starts_an_empty_thread(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("one"), s.text("two"))
    result = trove("--plain", *env.common, stdin="in the first\n/new\nin the second\n")
    assert result.returncode == 0, result.stderr
    threads = _threads(env.home)
    assert sorted(_prompts(events) for events in threads.values()) == [
        ["in the first"],
        ["in the second"],
    ]
    second = next(t for t, events in threads.items() if _prompts(events) == ["in the second"])
    assert f"[thread {second}]" in result.stderr
    assert "new thread" not in result.stdout  # a quiet command: the switch says it


def test_threads_lists_and_switches(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("one"), s.text("two"), s.text("three"))
    assert trove("--plain", *env.common, stdin="in the first\n").returncode == 0
    (first,) = _threads(env.home)
    result = trove(
        "--plain",
        *env.common,
        stdin=f"in the second\n/threads\n/threads {first}\nback in the first\n/threads nope\n",
    )
    assert result.returncode == 0, result.stderr
    threads = _threads(env.home)
    (second,) = set(threads) - {first}
    listing = result.stdout[result.stdout.index("Threads (newest message first") :]
    assert f"1 * {second}" in listing and f"2   {first}" in listing and "in the first" in listing
    assert f"Switching to thread {first}." in result.stdout
    assert _prompts(threads[first]) == ["in the first", "back in the first"]
    assert _prompts(threads[second]) == ["in the second"]
    assert "no thread 'nope' (/threads lists them)" in result.stderr


def test_steer_and_clear_in_the_repl(env: Env, server: ScriptedServer) -> None:
    """Piped input runs one line at a time, so nothing runs to steer: /steer says so and
    its text runs as a prompt of its own; /clear starts a new thread."""
    server.script(s.text("first answer"), s.text("second answer"))
    result = trove("--plain", *env.common, stdin="/steer be brief\n/clear\nagain\n")
    assert result.returncode == 0, result.stderr
    assert "Nothing to steer right now: sent as a prompt of its own" in result.stdout
    threads = _threads(env.home)
    assert sorted(_prompts(events) for events in threads.values()) == [["again"], ["be brief"]]


async def test_steer_command_reaches_the_running_turn(tmp_path: Path, server: ScriptedServer):
    """/steer is the engine's, the same in every front end: held between two requests of a
    turn, its text joins that turn before the next request."""
    import asyncio

    from engine.config import parse_config
    from engine.model.tools import ToolBox
    from engine.runtime import Runtime
    from tests.support import client_for, echo_tool, opened

    server.script(
        s.tool_calls([("echo", {"text": "x"})]), s.text("done", hold="before"), s.text("ok")
    )
    config = parse_config(
        {"model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0}},
        source="test",
        env={},
    )
    runtime = opened(Runtime.open(config, tmp_path, model=client_for(server)))
    runtime.driver.tools = ToolBox([echo_tool()])
    runtime.driver.send("start")
    await server.wait_requests(2)
    result = await runtime.commands.run("/steer mention pong")
    assert result.ok and result.text.startswith("Steering the running reply")
    server.release()
    await asyncio.wait_for(runtime.driver.when_idle(), 10)
    steered = [
        e for e in runtime.thread.log.events if isinstance(e, ev.UserMessage) and e.placement
    ]
    assert [(e.text, e.placement) for e in steered] == [("mention pong", "next-step")]
    assert any(m.get("content") == "mention pong" for m in server.requests[-1]["messages"])


def test_rewind_lists_then_goes_back_and_prints_the_prompt(env: Env, server: ScriptedServer):
    server.script(s.text("First answer."), s.text("Second answer."), s.text("Again."))
    lines = "first question\nsecond question\n/rewind\n/rewind 1\nsecond, edited\n"
    result = trove("--plain", *env.common, stdin=lines)
    assert result.returncode == 0, result.stderr
    listing = result.stdout.split("Prompts to rewind to", 1)[1]
    assert listing.index("second question") < listing.index("first question")
    assert "Rewound to just before prompt 1" in result.stdout
    assert "Its text, to send again or edit:\nsecond question" in result.stdout
    ((_, events),) = _threads(env.home).items()
    # The file keeps both branches; the thread goes on along the new one.
    assert _prompts(current_line(events)) == ["first question", "second, edited"]
    assert _prompts(events) == ["first question", "second question", "second, edited"]
    rewinds = [e for e in events if isinstance(e, ev.SessionRewind)]
    assert len(rewinds) == 1
