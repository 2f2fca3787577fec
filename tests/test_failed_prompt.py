"""Issue 25 item 4: a prompt sent while the server was down, then sent again, reaches the
model once.

A turn that fails before any reply or tool result withdraws its prompts from the
model's history (`turn/end` `withdrawn`); the log keeps them, and the front ends give
them back (engine.draft.withdrawn_text). A turn the model answered, even in part,
keeps its prompt: sending it again would repeat it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import parse_config
from engine.driver import Driver
from engine.log import SessionLog
from engine.model import ModelClient
from engine.model.tools import ToolBox
from engine.runtime import Runtime
from engine.surface import Surface
from engine.threads.draft import withdrawn_text
from tests.cli_support import Env, trove
from tests.support import chat_messages, client_for, echo_tool, make_driver, of_kind, opened

PROMPT = "what is the deploy code?"


def _users(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in chat_messages(request) if m["role"] == "user"]


async def _turn(driver: Driver, text: str) -> ev.TurnEnd:
    driver.send(text)
    await asyncio.wait_for(driver.when_idle(), 10)
    return of_kind(driver.log.events, ev.TurnEnd)[-1]


@pytest.mark.parametrize("down", ["unreachable", "500"])
async def test_a_prompt_sent_while_the_server_was_down_reaches_the_model_once(
    tmp_path: Path, server: ScriptedServer, refused_port: int, down: str
) -> None:
    driver = make_driver(tmp_path, server)
    server.script(s.text("hello to you"))
    await _turn(driver, "hello")
    live = driver.model
    if down == "unreachable":  # nobody listens: the connection is refused
        driver.model = opened(
            ModelClient(
                base_url=f"http://127.0.0.1:{refused_port}/v1",
                api_key="k",
                model="scripted-model",
                max_retries=0,
            )
        )
    else:
        server.script(s.error(500, "the server is down"))
    failed = await _turn(driver, PROMPT)
    assert failed.status == "error"
    [prompt] = [e for e in of_kind(driver.log.events, ev.UserMessage) if e.text == PROMPT]
    assert failed.withdrawn == (prompt.seq,)
    assert withdrawn_text(driver.log, failed) == PROMPT  # what a front end gives back
    driver.model = live
    server.script(s.text("ZX-4471"))
    answered = await _turn(driver, PROMPT)  # sent again, as the user does
    assert answered.status == "ok" and answered.withdrawn == ()
    assert _users(server.requests[-1]) == ["hello", PROMPT]
    # The log keeps both sends; a replay (the next open) agrees with the live surface.
    assert [e.text for e in of_kind(driver.log.events, ev.UserMessage)].count(PROMPT) == 2
    assert Surface.from_events(driver.log.events).entries == driver.surface.entries


async def test_every_prompt_of_a_failed_turn_is_withdrawn_and_given_back_in_order(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """A quiet queued prompt joins the waking one's turn: both leave, both come back."""
    driver = make_driver(tmp_path, server)
    server.script(s.error(503, "overloaded"))
    driver.send("first part", waking=False)
    failed = await _turn(driver, "second part")
    assert len(failed.withdrawn) == 2 and driver.surface.entries == []
    assert withdrawn_text(driver.log, failed) == "first part\n\nsecond part"
    server.script(s.text("both answered"))
    await _turn(driver, withdrawn_text(driver.log, failed))
    assert _users(server.requests[-1]) == ["first part\n\nsecond part"]


@pytest.mark.parametrize("how", ["cut mid-reply", "after a tool round", "tool round limit"])
async def test_a_turn_the_model_answered_keeps_its_prompt(
    tmp_path: Path, server: ScriptedServer, how: str
) -> None:
    """The model saw the prompt and replied (in part, or with a tool call): the prompt
    stays in its history and nothing is given back, so nothing is sent twice."""
    driver = make_driver(tmp_path, server, tools=ToolBox([echo_tool()]))
    if how == "cut mid-reply":
        server.script(s.drop(after_chunks=2))
    elif how == "after a tool round":
        server.script(s.tool_calls([("echo", {"text": "x"})]), s.error(500, "down"))
    else:
        driver.max_tool_rounds = 0
        server.script(s.tool_calls([("echo", {"text": "x"})]))
    failed = await _turn(driver, PROMPT)
    assert failed.status == "error" and failed.withdrawn == ()
    assert withdrawn_text(driver.log, failed) == ""
    assert [e.role for e in driver.surface.entries][0] == "user"
    server.script(s.text("go on"))
    await _turn(driver, "go on")
    assert _users(server.requests[-1]) == [PROMPT, "go on"]


async def test_a_cancelled_turn_keeps_its_prompt(tmp_path: Path, server: ScriptedServer) -> None:
    """Esc is the user's choice, not a failure: nothing is withdrawn or given back."""
    driver = make_driver(tmp_path, server)
    server.script(s.text("never sent", hold="before"))
    driver.send(PROMPT)
    await server.wait_requests(1)
    driver.cancel()
    await asyncio.wait_for(driver.when_idle(), 10)
    end = of_kind(driver.log.events, ev.TurnEnd)[-1]
    assert end.status == "cancelled" and end.withdrawn == ()
    assert [e.role for e in driver.surface.entries] == ["user"]
    server.release()


async def test_a_resumed_thread_keeps_the_withdrawal(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """The log is the record: reopened, the failed prompt is still out of the model's
    history, and still not queued again (it was given back, not left waiting)."""
    driver = make_driver(tmp_path, server)
    server.script(s.error(500, "down"))
    await _turn(driver, PROMPT)
    await driver.aclose()
    driver.log.close()
    log = SessionLog.open(tmp_path / "session.jsonl")
    again = opened(Driver(log, client_for(server)))
    assert again.surface.entries == [] and again.inbox == []
    server.script(s.text("ok"))
    await _turn(again, PROMPT)
    assert _users(server.requests[-1]) == [PROMPT]


async def test_compaction_and_history_search_see_a_prompt_sent_again_once(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """The withdrawn send is in no request, no compaction span, no archive batch and no
    active-history hit: only the send the model answered is."""
    config = parse_config(
        {
            "model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0},
            "compaction": {"keep_recent_tokens": 0},
        },
        source="test",
        env={},
    )
    rt = opened(Runtime.open(config, tmp_path, model=client_for(server)))
    server.script(s.text("hi"), s.error(500, "down"), s.text("ZX-4471"), s.text("welcome"))
    for text in ("hello", PROMPT, PROMPT, "thanks"):
        await _turn(rt.driver, text)

    async def user_hits() -> list[dict[str, Any]]:
        tools = rt.driver.offered_tools()
        raw = await tools.call("history_search", json.dumps({"query": "deploy code"}))
        return [hit for hit in json.loads(raw)["results"] if hit["role"] == "user"]

    assert [hit["origin"] for hit in await user_hits()] == ["active"]
    server.script(s.text("They asked for the deploy code."))
    outcome = await rt.compaction.compact_now(rt.driver)
    assert outcome is not None and outcome.replaced == 6  # three exchanges, the prompt once
    assert json.dumps(server.requests[-1]["messages"]).count(PROMPT) == 1
    assert [hit["origin"] for hit in await user_hits()] == ["archive"]


def test_one_shot_sent_again_reaches_the_model_once(env: Env, server: ScriptedServer) -> None:
    """`trove -p` against a server that is down exits 1; the same prompt again on that
    thread (--thread) is in the next request once."""
    server.script(s.error(500, "the server is down"))
    failed = trove(*env.common, "-p", PROMPT)
    assert failed.returncode == 1 and "the server is down" in failed.stderr
    [thread] = [p.name for p in (env.home / "users" / "local" / "threads").iterdir()]
    server.script(s.text("ZX-4471"))
    answered = trove(*env.common, "--thread", thread, "-p", PROMPT)
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.strip() == "ZX-4471"
    assert _users(server.requests[-1]) == [PROMPT]
