"""Stream faults: a reset, a stall, a malformed line, an empty or choiceless stream, a
stream the server cuts off (ends cleanly with no finish reason and no ``[DONE]``).

Each is served by the scripted server over a real socket and read by the real
client; the same faults are then run through the driver (what the log keeps)
and through the `trove` command (what the user sees and the exit code).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.driver import Driver
from engine.log import Event, SessionLog, read_events
from engine.model import ModelClient, ModelError
from engine.model.tools import Tool, ToolBox
from tests.cli_support import Env, trove
from tests.support import client_for, echo_tool, of_kind, opened

MESSAGES = [{"role": "user", "content": "hello"}]
CUT_OFF = "reply cut off: the server closed the stream"
"""How the line for a cut-off reply begins, whichever server cut it."""
STALL_TIMEOUT = 0.3
"""The client's read timeout in stall tests: the server holds, so only this ends the wait."""


@pytest.fixture
async def client(server: ScriptedServer) -> AsyncIterator[ModelClient]:
    mc = client_for(server)
    yield mc
    await mc.aclose()


def _clean_line(text: str) -> None:
    assert text and "\n" not in text and "Traceback" not in text
    for leak in ("JSONDecodeError", "Expecting", "ValidationError", "AttributeError", "TypeError"):
        assert leak not in text, text


# -- the client ----------------------------------------------------------------------------


async def test_reset_mid_stream_is_one_line_and_the_text_so_far_was_delivered(
    server: ScriptedServer, client: ModelClient
) -> None:
    server.script(s.reset(after_chunks=2))
    deltas: list[str] = []
    with pytest.raises(ModelError) as info:
        await client.complete(MESSAGES, on_delta=deltas.append)
    assert info.value.kind == "unreachable"
    assert "mid-reply" in str(info.value) and server.base_url in str(info.value)
    assert "".join(deltas) == "partial partial "


async def test_text_that_arrived_with_a_reset_is_delivered_while_the_loop_was_busy(
    server: ScriptedServer, client: ModelClient
) -> None:
    """The last text before a reset reaches the caller though the reset came before the
    reader next looked: the loop is held (as a frame would hold it) from the first text
    until the server has sent the rest and reset the connection."""
    server.script(dataclasses.replace(s.reset(after_chunks=3), hold=True))
    deltas: list[str] = []

    def on_delta(piece: str) -> None:
        deltas.append(piece)
        if len(deltas) == 1:
            server.release()
            server.block_until_reset()

    with pytest.raises(ModelError) as info:
        await client.complete(MESSAGES, on_delta=on_delta)
    assert info.value.kind == "unreachable"
    assert "".join(deltas) == "partial partial partial "
    assert len(server.requests) == 1  # a started reply is never retried
    _clean_line(str(info.value))


async def test_stall_mid_stream_times_out_with_a_clear_line(server: ScriptedServer) -> None:
    server.script(s.stall("partial answer that stalls"))
    mc = client_for(server, timeout=STALL_TIMEOUT)
    deltas: list[str] = []
    try:
        with pytest.raises(ModelError) as info:
            await mc.complete(MESSAGES, on_delta=deltas.append)
    finally:
        await mc.aclose()
    assert info.value.kind == "timeout"
    message = str(info.value)
    assert "mid-reply" in message and f"{STALL_TIMEOUT:g}s" in message
    assert "model.timeout" in message and server.base_url in message
    assert deltas == ["partial "]
    _clean_line(message)
    await server.wait_disconnects(1)  # the client hung up on the stalled stream


@pytest.mark.parametrize(
    "line",
    [
        '{"choices": [{"delta": ',  # cut off: not JSON at all
        "42",  # JSON, but not a chunk
        '{"choices": "oops"}',  # a chunk of the wrong shape
        '{"choices": [{"index": 0, "delta": {"content": 7}}]}',
        "[" * 100_000 + "]" * 100_000,  # nested deeper than either decoder goes
        '"\\ud800" \xff',  # what orjson refuses, and the standard library too
    ],
)
async def test_malformed_stream_names_the_server_not_the_exception(
    server: ScriptedServer, client: ModelClient, line: str
) -> None:
    server.script(s.malformed(after_chunks=1, line=line))
    deltas: list[str] = []
    with pytest.raises(ModelError) as info:
        await client.complete(MESSAGES, on_delta=deltas.append)
    assert info.value.kind == "malformed"
    assert "127.0.0.1" in str(info.value) and "malformed" in str(info.value)
    assert deltas == ["partial "]
    _clean_line(str(info.value))


@pytest.mark.parametrize("reply", [s.empty(), s.choiceless()], ids=["empty", "choiceless"])
async def test_an_empty_answer_is_an_error_that_says_so(
    server: ScriptedServer, client: ModelClient, reply: s.Reply
) -> None:
    server.script(reply)
    with pytest.raises(ModelError) as info:
        await client.complete(MESSAGES)
    assert info.value.kind == "empty"
    assert "empty answer" in str(info.value)
    _clean_line(str(info.value))


@pytest.mark.parametrize("framing", ["chunked", "close"])
@pytest.mark.parametrize(
    ("reply", "sent"),
    [
        (s.cutoff("The answer is forty-t"), "The answer is forty-t"),  # mid-word
        (s.cutoff("A whole sentence."), "A whole sentence."),  # after the last token
        (s.cutoff("Let me look.", calls=[("echo", '{"text": "hal')]), "Let me look."),
    ],
    ids=["mid-word", "after-the-last-token", "mid-tool-arguments"],
)
async def test_a_cut_off_stream_is_an_error_not_a_reply(
    server: ScriptedServer, client: ModelClient, reply: s.Reply, sent: str, framing: s.Framing
) -> None:
    server.script(dataclasses.replace(reply, framing=framing))
    deltas: list[str] = []
    with pytest.raises(ModelError) as info:
        await client.complete(MESSAGES, on_delta=deltas.append)
    assert info.value.kind == "cut_off"
    message = str(info.value)
    assert message.startswith(CUT_OFF) and server.base_url in message
    assert "".join(deltas) == sent  # the text so far reached the caller
    assert len(server.requests) == 1  # a started reply is never retried
    _clean_line(message)


@pytest.mark.parametrize("cut", [0, 1], ids=["no-bytes", "role-only"])
async def test_a_stream_cut_off_before_the_first_token_is_cut_off_not_empty(
    server: ScriptedServer, client: ModelClient, cut: int
) -> None:
    server.script(s.cutoff("never sent", cut=cut))
    with pytest.raises(ModelError) as info:
        await client.complete(MESSAGES)
    assert info.value.kind == "cut_off" and str(info.value).startswith(CUT_OFF)


async def test_a_finished_stream_without_done_is_whole(
    server: ScriptedServer, client: ModelClient
) -> None:
    """Some servers never send ``[DONE]``: a finish reason is the end of the reply."""
    server.script(s.text("a whole answer", done=False))
    completion = await client.complete(MESSAGES)
    assert completion.content == "a whole answer" and completion.finish_reason == "stop"
    # The connection is still good for the next request.
    server.script(s.text("the next one"))
    assert (await client.complete(MESSAGES)).content == "the next one"


async def test_a_lone_surrogate_escape_is_text_not_a_malformed_stream(
    server: ScriptedServer, client: ModelClient
) -> None:
    """JSON allows an escaped lone surrogate (a model cut between a pair's halves sends
    one), and the stream goes on; the log and the screen make it U+FFFD."""
    server.script(s.text("before \ud83dafter"))
    deltas: list[str] = []
    completion = await client.complete(MESSAGES, on_delta=deltas.append)
    assert completion.content == "before \ud83dafter"
    assert "".join(deltas) == "before \ud83dafter"


async def test_a_lone_surrogate_reply_is_logged_with_a_replacement_character(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(s.text("odd \udc00 text"))
    log = SessionLog.open(tmp_path / "session.jsonl")
    driver = opened(Driver(log, client_for(server)))
    await _run_one(driver)
    replies, end = _last_turn(log.events)
    assert end.status == "ok"
    assert replies[-1].content == "odd \ufffd text"
    await driver.aclose()
    on_disk = of_kind(read_events(tmp_path / "session.jsonl").events, ev.AssistantMessage)
    assert on_disk[-1].content == "odd \ufffd text"


# -- the driver: what the log keeps ----------------------------------------------------------


async def _run_one(driver: Driver, prompt: str = "tell me") -> None:
    driver.send(prompt)
    await driver.when_idle()


def _last_turn(events: list[Event]) -> tuple[list[Event], Event]:
    replies = of_kind(events, ev.AssistantMessage)
    return replies, of_kind(events, ev.TurnEnd)[-1]


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        (s.reset(after_chunks=2), "unreachable"),
        (s.drop(after_chunks=2), "unreachable"),
        (s.malformed(after_chunks=2), "malformed"),
        (s.stall("partial partial stalls", chunk_chars=16), "timeout"),
        (s.cutoff("partial partial "), "cut_off"),
    ],
    ids=["reset", "drop", "malformed", "stall", "cut-off"],
)
async def test_a_failed_stream_keeps_its_partial_reply_marked_interrupted(
    tmp_path: Path, server: ScriptedServer, fault: s.Reply, kind: str
) -> None:
    server.script(fault, s.text("the next answer"))
    log = SessionLog.open(tmp_path / "session.jsonl")
    driver = opened(Driver(log, client_for(server, timeout=STALL_TIMEOUT)))
    await _run_one(driver)
    replies, end = _last_turn(log.events)
    assert len(replies) == 1
    assert replies[0].content == "partial partial "
    assert replies[0].interrupted is True and replies[0].cancelled is False
    assert end.status == "error" and end.reason == kind
    _clean_line(end.error)
    # The partial reply is part of the conversation, like a cancelled one.
    assert driver.surface.messages()[-1] == {"role": "assistant", "content": "partial partial "}
    # The driver is idle and the next turn runs normally.
    await _run_one(driver, "again")
    replies, end = _last_turn(log.events)
    assert end.status == "ok" and replies[-1].content == "the next answer"
    await driver.aclose()
    # It is on disk, not only in memory.
    on_disk = of_kind(read_events(tmp_path / "session.jsonl").events, ev.AssistantMessage)
    assert on_disk[0].interrupted is True


async def test_a_cut_off_tool_call_is_not_run_and_the_text_before_it_is_kept(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """Half a call's arguments are not a call: nothing runs, nothing answers it, and
    the next request's history holds the kept text and no call."""
    ran: list[dict[str, Any]] = []
    echo = echo_tool()

    async def recording(args: dict[str, Any]) -> dict[str, Any]:
        ran.append(args)
        return await echo.handler(args)

    tool = Tool(echo.name, echo.description, echo.parameters, recording)
    server.script(s.cutoff("Let me look that up.", calls=[("echo", '{"text": "hal')]))
    log = SessionLog.open(tmp_path / "session.jsonl")
    driver = opened(Driver(log, client_for(server), tools=ToolBox([tool])))
    await _run_one(driver)
    replies, end = _last_turn(log.events)
    assert [(r.content, r.calls, r.interrupted) for r in replies] == [
        ("Let me look that up.", (), True)
    ]
    assert of_kind(log.events, ev.ToolResult) == [] and ran == []
    assert end.status == "error" and end.reason == "cut_off"
    assert end.error.startswith(CUT_OFF)
    await _run_one(driver, "again")
    history = server.requests[-1]["messages"]
    assert [m["role"] for m in history if m["role"] != "system"] == [
        "user",
        "assistant",
        "user",
    ]
    assert all("tool_calls" not in m for m in history)


async def test_a_cut_off_before_the_first_token_ends_the_turn_as_cut_off(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(s.cutoff("", cut=1))
    log = SessionLog.open(tmp_path / "session.jsonl")
    driver = opened(Driver(log, client_for(server)))
    await _run_one(driver)
    replies, end = _last_turn(log.events)
    assert replies == []  # nothing was said, so nothing is kept
    assert end.status == "error" and end.reason == "cut_off" and end.error.startswith(CUT_OFF)


async def test_an_empty_answer_ends_the_turn_with_a_notice_and_logs_no_reply(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(s.choiceless())
    log = SessionLog.open(tmp_path / "session.jsonl")
    driver = opened(Driver(log, client_for(server)))
    await _run_one(driver)
    replies, end = _last_turn(log.events)
    assert replies == []
    assert end.status == "error" and end.reason == "empty"
    assert "empty answer" in end.error
    assert of_kind(log.events, ev.UserMessage)[0].text == "tell me"
    await driver.aclose()


# -- the command: what the user sees ---------------------------------------------------------


def _with_timeout(env: Env, seconds: float) -> None:
    with env.config.open("a", encoding="utf-8") as f:
        f.write(f"  timeout: {seconds}\n")


def _log_events(env: Env) -> list[Event]:
    (path,) = sorted((env.home / "users" / "local" / "threads").glob("*/session.jsonl"))
    return read_events(path).events


def _error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got:\n{stderr}"
    _clean_line(lines[0])
    return lines[0]


@pytest.mark.parametrize(
    ("fault", "needle"),
    [
        (s.reset(after_chunks=2), "mid-reply"),
        (s.malformed(after_chunks=2), "malformed"),
        (s.stall("partial partial stalls", chunk_chars=16), "mid-reply"),
    ],
    ids=["reset", "malformed", "stall"],
)
def test_prompt_mode_shows_the_partial_reply_and_one_error_line(
    env: Env, server: ScriptedServer, fault: s.Reply, needle: str
) -> None:
    _with_timeout(env, 0.5)
    server.script(fault)
    result = trove("-p", "tell me", *env.common)
    assert result.returncode == 1
    assert result.stdout.strip() == "partial partial"
    line = _error_line(result.stderr)
    assert needle in line and "127.0.0.1" in line and "partial reply is kept" in line
    reply = of_kind(_log_events(env), ev.AssistantMessage)[0]
    assert reply.content == "partial partial " and reply.interrupted is True


def test_prompt_mode_exits_1_on_a_cut_off_reply_and_says_so(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.cutoff("The answer is forty-t"))
    result = trove("-p", "tell me", *env.common)
    assert result.returncode == 1
    assert result.stdout.strip() == "The answer is forty-t"
    line = _error_line(result.stderr)
    assert line.removeprefix("error: ").startswith(CUT_OFF), line
    assert "127.0.0.1" in line and "partial reply is kept" in line
    (reply,) = of_kind(_log_events(env), ev.AssistantMessage)
    assert reply.content == "The answer is forty-t" and reply.interrupted is True
    (end,) = of_kind(_log_events(env), ev.TurnEnd)
    assert end.status == "error" and end.reason == "cut_off"


@pytest.mark.parametrize("reply", [s.empty(), s.choiceless()], ids=["empty", "choiceless"])
def test_prompt_mode_exits_1_on_an_empty_answer(
    env: Env, server: ScriptedServer, reply: s.Reply
) -> None:
    server.script(reply)
    result = trove("-p", "tell me", *env.common)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "empty answer" in _error_line(result.stderr)


def test_plain_mode_reports_each_fault_and_goes_on(env: Env, server: ScriptedServer) -> None:
    server.script(s.reset(after_chunks=1), s.empty(), s.text("third answer"))
    result = trove("--plain", *env.common, stdin="one\ntwo\nthree\n")
    assert result.returncode == 1  # piped input: a failed turn is a failed run
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 2, result.stderr
    assert "mid-reply" in errors[0] and "partial reply is kept" in errors[0]
    assert "empty answer" in errors[1]
    assert "partial" in result.stdout and "third answer" in result.stdout
    ends = of_kind(_log_events(env), ev.TurnEnd)
    assert [e.status for e in ends] == ["error", "error", "ok"]
