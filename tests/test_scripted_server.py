"""Checks of the scripted server's own paths that engine tests do not reach."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest

from devtools.scripted_server import ScriptedServer, cutoff, text, tool_calls

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = [{"role": "user", "content": "ping"}]


async def test_non_stream_and_models(server: ScriptedServer) -> None:
    server.script(text("pong"), tool_calls([("task_note", {"text": "x"})]))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k") as oa:
        plain = await oa.chat.completions.create(model="scripted-model", messages=MESSAGES)
        assert plain.choices[0].message.content == "pong"
        assert plain.usage is not None and plain.usage.total_tokens > 0
        called = await oa.chat.completions.create(model="scripted-model", messages=MESSAGES)
        call = called.choices[0].message.tool_calls[0]
        assert called.choices[0].finish_reason == "tool_calls"
        assert (call.function.name, json.loads(call.function.arguments)) == (
            "task_note",
            {"text": "x"},
        )
        models = await oa.models.list()
        assert [m.id for m in models.data] == ["scripted-model"]


async def test_unknown_path_is_json_404(server: ScriptedServer) -> None:
    url = server.base_url + "/nope"
    with pytest.raises(urllib.error.HTTPError) as info:
        await asyncio.to_thread(urllib.request.urlopen, url, timeout=5)
    assert info.value.code == 404
    assert "error" in json.loads(info.value.read())


async def test_release_opens_held_reply(server: ScriptedServer) -> None:
    server.script(text("held reply", chunk_chars=4, hold=True))
    seen: list[str] = []
    first = asyncio.Event()
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k") as oa:

        async def consume() -> None:
            stream = await oa.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    seen.append(chunk.choices[0].delta.content)
                    first.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(first.wait(), timeout=5)
        assert seen == ["held"] and not task.done()
        server.release()
        await asyncio.wait_for(task, timeout=5)
    assert "".join(seen) == "held reply"


async def test_release_before_dispatch_pre_opens_gate(server: ScriptedServer) -> None:
    server.release()
    server.script(text("no wait", hold="before"))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k") as oa:
        reply = await asyncio.wait_for(
            oa.chat.completions.create(model="m", messages=MESSAGES), timeout=5
        )
    assert reply.choices[0].message.content == "no wait"


def test_process_mode_prints_base_url_and_serves() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "devtools.scripted_server", "--reply-words", "5"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        _exercise_process(proc)


def _exercise_process(proc: subprocess.Popen[str]) -> None:
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        req = urllib.request.Request(
            base_url + "/chat/completions",
            data=json.dumps({"model": "m", "messages": MESSAGES}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = json.loads(resp.read())
        assert len(body["choices"][0]["message"]["content"].split()) == 5
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_a_reply_streams_its_thinking_first(server: ScriptedServer, field: str) -> None:
    """The thinking arrives as the servers send it: deltas of its own field before the
    text. The SDK keeps a field it has no attribute for in `model_extra`."""
    server.script(text("the answer", reasoning="let me think", reasoning_field=field))
    order: list[tuple[str, str]] = []
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k") as oa:
        stream = await oa.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        async for chunk in stream:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            thought = (delta.model_extra or {}).get(field)
            if thought:
                order.append(("thought", thought))
            if delta.content:
                order.append(("text", delta.content))
    kinds = [kind for kind, _ in order]
    assert kinds == sorted(kinds, key=lambda kind: kind != "thought")  # thinking first
    assert "".join(t for kind, t in order if kind == "thought") == "let me think"
    assert "".join(t for kind, t in order if kind == "text") == "the answer"


async def test_a_non_streamed_reply_carries_its_thinking(server: ScriptedServer) -> None:
    server.script(text("pong", reasoning="hmm", reasoning_field="reasoning"))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k") as oa:
        plain = await oa.chat.completions.create(model="m", messages=MESSAGES)
    message = plain.choices[0].message
    assert message.content == "pong"
    assert (message.model_extra or {}).get("reasoning") == "hmm"


async def test_a_cut_off_reply_says_its_connection_closes(server: ScriptedServer) -> None:
    """The server closes after a cut-off body; a client told so never sends its next
    request down that connection (which would fail at once in a client without retries)."""
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as oa:
        for _ in range(20):
            server.script(cutoff("partial "))
            raw = await oa.chat.completions.with_raw_response.create(
                model="m", messages=MESSAGES, stream=True
            )
            assert raw.headers.get("connection") == "close"
            text_seen = [c.choices[0].delta.content async for c in raw.parse() if c.choices]
            assert "".join(t or "" for t in text_seen) == "partial "
