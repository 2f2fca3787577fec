"""engine.model against the scripted server: real sockets, real SSE, the real SDK."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from devtools.scripted_server import (
    ScriptedServer,
    cutoff,
    drop,
    error,
    overflow,
    text,
    tool_calls,
)
from engine.model import Completion, ContextOverflowError, ModelClient, ModelError, ToolCall
from engine.model._stream import StreamReader

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}]


@pytest.fixture
async def client(server: ScriptedServer) -> AsyncIterator[ModelClient]:
    """A client aimed at the scripted server, closed after the test."""
    mc = ModelClient(base_url=server.base_url, api_key="sk-test", model="scripted-model")
    yield mc
    await mc.aclose()


async def _until_first_delta(client: ModelClient, deltas: list[str]) -> asyncio.Task[Any]:
    """Start `complete` in a task, the text it tells going into `deltas`, and return the
    task once the first delta came (the server holds the rest)."""
    first = asyncio.Event()

    def on_delta(piece: str) -> None:
        deltas.append(piece)
        first.set()

    task = asyncio.create_task(client.complete(MESSAGES, on_delta=on_delta))
    await asyncio.wait_for(first.wait(), timeout=5)
    return task


def _assert_one_line(err: ModelError) -> None:
    line = str(err)
    assert line and "\n" not in line and "Traceback" not in line


async def test_streaming_deltas_arrive_in_order(
    server: ScriptedServer, client: ModelClient
) -> None:
    """Text reaches `on_delta` as it arrives: the first chunk while the server holds the
    rest back, then the rest (chunks that arrived together come as one delta)."""
    server.script(text("The quick brown fox jumps.", chunk_chars=3, hold=True))
    deltas: list[str] = []
    task = await _until_first_delta(client, deltas)
    assert deltas == ["The"]
    server.release()
    result = await task
    assert isinstance(result, Completion)
    assert len(deltas) > 1
    assert "".join(deltas) == result.content == "The quick brown fox jumps."
    assert result.finish_reason == "stop"
    assert result.tool_calls == []
    assert result.model == "scripted-model"
    body = server.requests[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == MESSAGES
    assert "tools" not in body and "max_tokens" not in body


async def test_usage_from_final_chunk(server: ScriptedServer, client: ModelClient) -> None:
    usage = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    server.script(text("hi", usage=usage), text("estimated"))
    first = await client.complete(MESSAGES)
    assert first.usage == usage
    second = await client.complete(MESSAGES)
    assert second.usage is not None
    assert second.usage["completion_tokens"] > 0 and second.usage["prompt_tokens"] > 0


async def test_tool_calls_assembled_across_chunks(
    server: ScriptedServer, client: ModelClient
) -> None:
    args_a = {"query": "compaction lock", "limit": 8}
    args_b = '{"source_id": "s-42", "offset": 4000}'
    server.script(
        tool_calls([("history_search", args_a), ("history_read", args_b)], content="Looking.")
    )
    tools = [
        {
            "type": "function",
            "function": {"name": "history_search", "parameters": {"type": "object"}},
        }
    ]
    deltas: list[str] = []
    result = await client.complete(MESSAGES, tools=tools, on_delta=deltas.append)
    assert result.finish_reason == "tool_calls"
    assert result.content == "".join(deltas) == "Looking."
    assert [c.name for c in result.tool_calls] == ["history_search", "history_read"]
    assert json.loads(result.tool_calls[0].arguments) == args_a
    assert result.tool_calls[1].arguments == args_b
    assert all(isinstance(c, ToolCall) and c.id.startswith("call_") for c in result.tool_calls)
    assert len({c.id for c in result.tool_calls}) == 2
    assert server.requests[0]["tools"] == tools


async def test_empty_tools_not_sent_and_max_tokens_sent(server: ScriptedServer) -> None:
    mc = ModelClient(base_url=server.base_url, api_key=None, model="m1", max_tokens=77)
    try:
        await mc.complete(MESSAGES, tools=[], model="m2")
    finally:
        await mc.aclose()
    body = server.requests[0]
    assert body["max_tokens"] == 77
    assert body["model"] == "m2"
    assert "tools" not in body
    # No key configured: a placeholder still lets the request go out.
    assert server.request_headers[0]["authorization"].startswith("Bearer ")


async def test_the_history_goes_out_as_given_encoded_by_trove_not_the_sdk(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's typed transform and its JSON encoding each walk every message on the
    UI loop: a cost per request that grows with the thread. Trove encodes the body
    itself; the history and tools arrive unchanged, the configured extra body beside them."""
    from openai import _base_client

    seen: list[Any] = []
    original = _base_client.openapi_dumps

    def spy(obj: Any) -> bytes:
        seen.append(obj)
        return original(obj)

    monkeypatch.setattr(_base_client, "openapi_dumps", spy)
    history = [MESSAGES[0]] + [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n} ünïcode \ud800"}
        for n in range(500)
    ]
    tools = [{"type": "function", "function": {"name": "task_note", "parameters": {}}}]
    mc = ModelClient(
        base_url=server.base_url,
        api_key="k",
        model="m",
        max_tokens=9,
        extra_body={"repeat_penalty": 1.1, "max_tokens": 12},
    )
    server.script(text("ok"))
    try:
        await mc.complete(history, tools=tools)
    finally:
        await mc.aclose()
    body = server.requests[0]
    assert body["messages"] == history and body["tools"] == tools
    assert body["model"] == "m" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True} and body["repeat_penalty"] == 1.1
    assert body["max_tokens"] == 12  # the configured extra body goes over the standard fields
    assert not any(isinstance(obj, dict) and obj.get("messages") for obj in seen)


async def test_a_long_history_is_encoded_with_turns_for_the_loop_between_slices() -> None:
    """Encoding 20,000 messages gives the loop turns (a keystroke waits for one slice,
    not the whole history), and the bytes are the JSON of the body as given."""
    from engine.model._wire import SLICE_BYTES, encode_body

    messages = [{"role": "user", "content": f"message {n} " + "x" * 100} for n in range(20_000)]
    body = {"messages": messages, "model": "m", "options": {1: "non-str key"}}
    turns = 0
    encoding = True

    async def probe() -> None:
        nonlocal turns
        while encoding:
            turns += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(probe())
    await asyncio.sleep(0)
    encoded = await encode_body(body)
    encoding = False
    await task
    expected = {"messages": messages, "model": "m", "options": {"1": "non-str key"}}
    assert json.loads(encoded) == expected
    assert turns >= len(encoded) // SLICE_BYTES - 1 >= 5
    assert json.loads(await encode_body({"messages": []})) == {"messages": []}


async def test_echo_when_script_is_empty(server: ScriptedServer, client: ModelClient) -> None:
    result = await client.complete(MESSAGES)
    assert result.content == "echo: hello there"


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_retry_then_success(server: ScriptedServer, client: ModelClient, status: int) -> None:
    server.script(error(status, "try later"), text("recovered"))
    result = await client.complete(MESSAGES)
    assert result.content == "recovered"
    assert len(server.requests) == 2


async def test_rate_limit_exhausts_retries(server: ScriptedServer, client: ModelClient) -> None:
    server.script(*[error(429, "Rate limit reached for requests")] * 3)
    with pytest.raises(ModelError) as info:
        await client.complete(MESSAGES)
    assert info.value.kind == "rate_limit"
    assert len(server.requests) == 3  # first try + max_retries=2
    assert server.base_url in str(info.value)
    _assert_one_line(info.value)


async def test_server_error_exhausts_retries(server: ScriptedServer) -> None:
    mc = ModelClient(base_url=server.base_url, api_key="k", model="m", max_retries=1)
    server.script(*[error(502, "upstream\nexploded")] * 2)
    try:
        with pytest.raises(ModelError) as info:
            await mc.complete(MESSAGES)
    finally:
        await mc.aclose()
    assert info.value.kind == "server"
    assert "upstream exploded" in str(info.value)
    assert len(server.requests) == 2
    _assert_one_line(info.value)


@pytest.mark.parametrize(
    ("reply", "kind", "needle"),
    [
        (error(401, "Incorrect API key provided", code="invalid_api_key"), "auth", "API key"),
        (error(403, "Forbidden"), "auth", "API key"),
        (error(404, "The model does not exist", code="model_not_found"), "not_found", "'gpt-x'"),
        (error(400, "Invalid value for 'temperature'\nsee docs"), "bad_request", "temperature"),
    ],
)
async def test_status_errors_map_to_kinds(
    server: ScriptedServer, reply: object, kind: str, needle: str
) -> None:
    server.script(reply)  # type: ignore[arg-type]
    mc = ModelClient(base_url=server.base_url, api_key="k", model="gpt-x")
    try:
        with pytest.raises(ModelError) as info:
            await mc.complete(MESSAGES)
    finally:
        await mc.aclose()
    assert info.value.kind == kind
    assert needle in str(info.value)
    assert server.base_url in str(info.value)
    assert not isinstance(info.value, ContextOverflowError)
    assert len(server.requests) == 1  # 4xx is never retried
    _assert_one_line(info.value)


async def test_long_bad_request_message_is_truncated(server: ScriptedServer) -> None:
    server.script(error(400, "x" * 5000))
    mc = ModelClient(base_url=server.base_url, api_key="k", model="m")
    try:
        with pytest.raises(ModelError) as info:
            await mc.complete(MESSAGES)
    finally:
        await mc.aclose()
    assert len(str(info.value)) < 400


async def test_unreachable_port(refused_port: int) -> None:
    url = f"http://127.0.0.1:{refused_port}/v1"
    mc = ModelClient(base_url=url, api_key="k", model="m", max_retries=0)
    try:
        with pytest.raises(ModelError) as info:
            await mc.complete(MESSAGES)
    finally:
        await mc.aclose()
    assert info.value.kind == "unreachable"
    assert url in str(info.value)
    assert "model.base_url" in str(info.value)
    _assert_one_line(info.value)


async def test_overflow(server: ScriptedServer, client: ModelClient) -> None:
    server.script(overflow())
    with pytest.raises(ContextOverflowError) as info:
        await client.complete(MESSAGES)
    assert info.value.kind == "overflow"
    assert "maximum context length" in str(info.value)
    assert len(server.requests) == 1
    _assert_one_line(info.value)


async def test_overflow_recognised_by_wording_without_code(
    server: ScriptedServer, client: ModelClient
) -> None:
    # llama.cpp's phrasing, with no OpenAI error code.
    server.script(error(400, "the request exceeds the available context size, try increasing it"))
    with pytest.raises(ContextOverflowError):
        await client.complete(MESSAGES)


async def test_cancel_mid_stream_keeps_partial_and_closes(
    server: ScriptedServer, client: ModelClient
) -> None:
    server.script(text("partial answer that never finishes", chunk_chars=7, hold=True))
    deltas: list[str] = []
    task = await _until_first_delta(client, deltas)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert deltas == ["partial"]
    # The server sees the client hang up while the reply is still held.
    await server.wait_disconnects(1)
    # The client stays usable for the next turn.
    result = await client.complete(MESSAGES)
    assert result.content == "echo: hello there"


async def test_cancel_before_any_byte(server: ScriptedServer, client: ModelClient) -> None:
    server.script(text("never seen", hold="before"))
    task = asyncio.create_task(client.complete(MESSAGES))
    await server.wait_requests(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await server.wait_disconnects(1)


async def test_connection_dropped_mid_stream(server: ScriptedServer, client: ModelClient) -> None:
    server.script(drop(after_chunks=2))
    deltas: list[str] = []
    with pytest.raises(ModelError) as info:
        await client.complete(MESSAGES, on_delta=deltas.append)
    assert info.value.kind == "unreachable"
    assert "mid-reply" in str(info.value)
    assert "".join(deltas) == "partial partial "
    assert len(server.requests) == 1  # a started stream is not retried
    _assert_one_line(info.value)


async def test_read_timeout(server: ScriptedServer) -> None:
    # The server holds until stopped, so only the client's timeout can end the wait.
    server.script(text("late", hold="before"))
    mc = ModelClient(base_url=server.base_url, api_key="k", model="m", max_retries=0, timeout=0.2)
    try:
        with pytest.raises(ModelError) as info:
            await mc.complete(MESSAGES)
    finally:
        await mc.aclose()
    assert info.value.kind == "timeout"
    assert "0.2s" in str(info.value)
    _assert_one_line(info.value)


async def test_aclose_without_request_is_harmless(server: ScriptedServer) -> None:
    """Closing a client that never sent anything raises nothing and sends nothing, may be
    repeated, and leaves it usable: an app that switches threads reuses one client."""
    await ModelClient(base_url=None, api_key=None, model="m").aclose()  # not even configured
    mc = ModelClient(base_url=server.base_url, api_key="k", model="m", max_retries=0)
    try:
        await mc.aclose()
        await mc.aclose()
        assert server.requests == []
        assert (await mc.complete(MESSAGES)).content == "echo: hello there"
        await mc.aclose()
        assert (await mc.complete(MESSAGES)).content == "echo: hello there"
    finally:
        await mc.aclose()
    assert len(server.requests) == 2


def test_openai_imported_lazily() -> None:
    code = (
        "import sys, engine.model\n"
        "assert 'openai' not in sys.modules, 'engine.model imported openai eagerly'\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -- reasoning models: the thinking streamed before the answer ---------------------


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_thinking_is_collected_apart_from_the_answer(
    server: ScriptedServer, client: ModelClient, field: str
) -> None:
    """DeepSeek-R1, Qwen3 and gpt-oss stream their thinking in `reasoning_content` or
    `reasoning` deltas: it reaches its own callback, as it arrives, and not the text."""
    server.script(
        text(
            "The answer.",
            reasoning="First, think. Then answer.",
            reasoning_field=field,
            hold="answer",
        )
    )
    deltas: list[str] = []
    thoughts: list[str] = []
    thought = asyncio.Event()

    def on_reasoning(piece: str) -> None:
        thoughts.append(piece)
        if "".join(thoughts) == "First, think. Then answer.":
            thought.set()

    task = asyncio.create_task(
        client.complete(MESSAGES, on_delta=deltas.append, on_reasoning=on_reasoning)
    )
    # Streamed, not handed over at the end: all of it is told while the answer is held.
    await asyncio.wait_for(thought.wait(), timeout=5)
    assert deltas == []
    server.release()
    result = await task
    assert result.content == "".join(deltas) == "The answer."
    assert result.reasoning == "".join(thoughts) == "First, think. Then answer."


async def test_thinking_before_tool_calls_is_kept(
    server: ScriptedServer, client: ModelClient
) -> None:
    server.script(tool_calls([("history_search", {"query": "x"})], reasoning="I should search."))
    result = await client.complete(MESSAGES)
    assert result.reasoning == "I should search."
    assert [call.name for call in result.tool_calls] == ["history_search"]


def test_a_delta_with_both_names_is_one_thought() -> None:
    """Some servers send the thinking under both names at once: it is counted once."""
    reader = StreamReader(served_model="m")
    both = {"choices": [{"delta": {"reasoning_content": "hm", "reasoning": "hm"}}]}
    assert reader.feed(both) == ("hm", "")
    assert reader.feed({"choices": [{"delta": {"reasoning": " ok", "content": "A"}}]}) == (
        " ok",
        "A",
    )
    assert reader.completion().reasoning == "hm ok"


def test_thinking_of_the_wrong_type_is_a_malformed_chunk() -> None:
    reader = StreamReader(served_model="m")
    with pytest.raises(TypeError):
        reader.feed({"choices": [{"delta": {"reasoning_content": 7}}]})


async def test_a_reply_that_only_thought_is_no_answer(
    server: ScriptedServer, client: ModelClient
) -> None:
    """Thinking with no text after it (the token limit hit mid-thought) must not pass
    for an answer; the thinking was handed over as it came, so the caller keeps it."""
    server.script(text("", reasoning="thinking and thinking"))
    thoughts: list[str] = []
    with pytest.raises(ModelError) as info:
        await client.complete(MESSAGES, on_reasoning=thoughts.append)
    assert info.value.kind == "empty"
    assert "only thought" in str(info.value)
    assert "".join(thoughts) == "thinking and thinking"


async def test_a_stream_cut_off_while_thinking_hands_over_the_thought_so_far(
    server: ScriptedServer, client: ModelClient
) -> None:
    server.script(cutoff("never sent", reasoning="half a thou", cut=3, chunk_chars=4))
    thoughts: list[str] = []
    with pytest.raises(ModelError) as info:
        await client.complete(MESSAGES, on_reasoning=thoughts.append)
    assert info.value.kind == "cut_off"
    assert "".join(thoughts) == "half a t"
