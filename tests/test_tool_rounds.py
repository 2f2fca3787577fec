"""The per-turn tool-round limit: a model that never stops calling tools ends its turn.

Proven against a scripted model that answers every request with a tool call,
through the driver (what the log holds and the next request looks like), the
config (the key and its one-line error) and the `trove` command (-p, --plain).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import ConfigError, parse_config
from engine.log import Event, read_events
from engine.model.tools import ToolBox
from tests.cli_support import Env, trove
from tests.support import echo_tool, make_driver, of_kind


def _assert_every_call_answered(messages: list[dict]) -> None:
    """What the server requires of a request: each tool call followed by its result."""
    for i, message in enumerate(messages):
        ids = [c["id"] for c in message.get("tool_calls") or ()]
        answered = [m.get("tool_call_id") for m in messages[i + 1 : i + 1 + len(ids)]]
        assert answered == ids, messages


async def test_a_model_that_keeps_calling_tools_is_stopped_after_the_limit(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.always(s.tool_calls([("echo", {"text": "again"})]))
    d = make_driver(tmp_path, server, tools=ToolBox([echo_tool()]), max_tool_rounds=3)
    d.send("loop forever")
    await asyncio.wait_for(d.when_idle(), 10)  # without a limit this never returns
    events = d.log.events
    assert len(server.requests) == 4  # three rounds run, the fourth request's calls refused
    results = [json.loads(e.content) for e in of_kind(events, ev.ToolResult)]
    assert results[:3] == [{"echo": "again"}] * 3
    assert results[3]["status"] == "error" and results[3]["error"] == "tool_round_limit"
    # Every call the model made has its result: the last assistant message too.
    calls = [c.id for e in of_kind(events, ev.AssistantMessage) for c in e.calls]
    assert [e.call_id for e in of_kind(events, ev.ToolResult)] == calls
    end = of_kind(events, ev.TurnEnd)[-1]
    assert end.status == "error" and end.reason == "tool_rounds"
    assert "3 rounds" in end.error and "model.max_tool_rounds" in end.error
    assert "\n" not in end.error
    assert d.running_turn is None and not d.inbox

    # The next turn runs, and its request is valid: no call without a result.
    server.script(s.text("a plain answer"))
    d.send("now just answer")
    await asyncio.wait_for(d.when_idle(), 10)
    assert of_kind(d.log.events, ev.TurnEnd)[-1].status == "ok"
    _assert_every_call_answered(server.requests[-1]["messages"])
    await d.aclose()


async def test_a_turn_under_the_limit_is_untouched(tmp_path: Path, server: ScriptedServer) -> None:
    call = s.tool_calls([("echo", {"text": "x"})])
    server.script(call, call, s.text("done"))
    d = make_driver(tmp_path, server, tools=ToolBox([echo_tool()]), max_tool_rounds=2)
    d.send("two rounds then answer")
    await asyncio.wait_for(d.when_idle(), 10)
    end = of_kind(d.log.events, ev.TurnEnd)[-1]
    assert end.status == "ok" and end.reason is None
    assert of_kind(d.log.events, ev.AssistantMessage)[-1].content == "done"
    await d.aclose()


async def test_the_limit_queues_nothing_away(tmp_path: Path, server: ScriptedServer) -> None:
    """A prompt queued behind the looping turn runs once the limit ends it."""
    call = s.tool_calls([("echo", {"text": "again"})])
    server.script(call, call, s.text("the queued answer"))
    d = make_driver(tmp_path, server, tools=ToolBox([echo_tool()]), max_tool_rounds=1)
    d.send("loop")
    queued = d.send("queued behind it")
    await asyncio.wait_for(d.when_idle(), 10)
    ends = of_kind(d.log.events, ev.TurnEnd)
    assert [e.status for e in ends] == ["error", "ok"]
    assert of_kind(d.log.events, ev.TurnStart)[-1].items == (queued,)
    assert of_kind(d.log.events, ev.AssistantMessage)[-1].content == "the queued answer"
    await d.aclose()


# -- config --------------------------------------------------------------------------------


def test_the_key_defaults_and_parses() -> None:
    assert parse_config(None, source="c.yaml", env={}).model.max_tool_rounds == 16
    data = {"model": {"max_tool_rounds": 40}}
    assert parse_config(data, source="c.yaml", env={}).model.max_tool_rounds == 40


@pytest.mark.parametrize("value", [0, -1, "many", True, 2.5, None])
def test_a_bad_value_is_one_line_naming_the_key(value: object) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"model": {"max_tool_rounds": value}}, source="c.yaml", env={})
    message = str(info.value)
    assert message.startswith("c.yaml: model.max_tool_rounds: expected an integer >= 1")
    assert "\n" not in message


# -- the command ---------------------------------------------------------------------------

LOOPING_CALL = s.tool_calls([("history_search", {"query": "anything"})])


def _limit(env: Env, rounds: int) -> None:
    with env.config.open("a", encoding="utf-8") as f:
        f.write(f"  max_tool_rounds: {rounds}\n")


def _events(env: Env) -> list[Event]:
    (path,) = sorted((env.home / "users" / "local" / "threads").glob("*/session.jsonl"))
    return read_events(path).events


def _error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_prompt_mode_ends_the_turn_with_one_line_and_exit_1(
    env: Env, server: ScriptedServer
) -> None:
    _limit(env, 2)
    server.always(LOOPING_CALL)
    result = trove("-p", "search forever", *env.common)
    assert result.returncode == 1
    assert len(server.requests) == 3
    (line,) = _error_lines(result.stderr)
    assert "2 rounds" in line and "model.max_tool_rounds" in line
    end = of_kind(_events(env), ev.TurnEnd)[-1]
    assert end.status == "error" and end.reason == "tool_rounds"


def test_plain_mode_ends_the_looping_turn_and_runs_the_next(
    env: Env, server: ScriptedServer
) -> None:
    _limit(env, 1)
    server.script(LOOPING_CALL, LOOPING_CALL, s.text("the second answer"))
    result = trove("--plain", *env.common, stdin="search forever\nthen answer\n")
    assert result.returncode == 1  # piped input: a failed turn is a failed run
    (line,) = _error_lines(result.stderr)
    assert "after 1 round of tool calls" in line
    assert "the second answer" in result.stdout
    ends = of_kind(_events(env), ev.TurnEnd)
    assert [e.status for e in ends] == ["error", "ok"]
