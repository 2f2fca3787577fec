"""Issue 12 item 10: an unreachable or stalled server says "retrying (2/3)…" while it retries,
and a connection that cannot be made fails on the short connect timeout, not the read one."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine.config import parse_config
from engine.model import ModelClient, ModelError
from engine.model.backend import choose_backend
from engine.model.local.runner import xllamacpp_installed
from engine.port import Retrying
from tests.cli_support import trove
from tests.support import opened


@pytest.fixture
def stalling() -> Iterator[str]:
    """A server that accepts connections (the kernel does, from the backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


class _Retries(list[tuple[int, int]]):
    """A model client's observer that keeps each retry it hears of."""

    def on_retry(self, attempt: int, attempts: int) -> None:
        self.append((attempt, attempts))

    def on_model_status(self, text: str) -> None:
        pass


def _client(url: str, **kw: float) -> tuple[ModelClient, list[tuple[int, int]]]:
    seen = _Retries()
    client = ModelClient(base_url=url, api_key="k", model="m", observer=seen, **kw)  # type: ignore[arg-type]
    opened(client)
    return client, seen


async def test_a_port_nobody_listens_on_reports_each_retry(refused_port: int) -> None:
    client, seen = _client(f"http://127.0.0.1:{refused_port}/v1", max_retries=2)
    with pytest.raises(ModelError) as failed:
        await client.complete([{"role": "user", "content": "hi"}])
    assert failed.value.kind == "unreachable"
    assert seen == [(2, 3), (3, 3)]
    assert Retrying(2, 3).text == "retrying (2/3)…"


async def test_a_server_that_accepts_then_stalls_reports_each_retry(stalling: str) -> None:
    client, seen = _client(stalling, max_retries=1, timeout=0.3)
    with pytest.raises(ModelError) as failed:
        await client.complete([{"role": "user", "content": "hi"}])
    assert failed.value.kind == "timeout"
    assert seen == [(2, 2)]


async def test_the_connect_timeout_is_short_and_apart_from_the_read_timeout() -> None:
    config = parse_config(
        {"model": {"base_url": "http://127.0.0.1:9/v1", "api_key": "k", "connect_timeout": 2.5}},
        source="test",
        env={},
    )
    client = opened(choose_backend(config, {}).make_client())
    await client.prepare()
    timeout = client._client.timeout  # type: ignore[union-attr]
    assert (timeout.connect, timeout.read) == (2.5, 600.0)
    assert parse_config({}, source="t", env={}).model.connect_timeout == 3.0


@pytest.mark.parametrize("mode", [["-p", "hello"], ["--plain"]])
def test_the_command_line_says_retrying_on_stderr(
    tmp_path: Path, mode: list[str], refused_port: int
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"model:\n  base_url: http://127.0.0.1:{refused_port}/v1\n  api_key: k\n  max_retries: 1\n",
        encoding="utf-8",
    )
    done = trove("--home", str(tmp_path / "home"), "--config", str(config), *mode, stdin="hello\n")
    assert "[retrying (2/2)…]" in done.stderr
    assert done.returncode == 1
    assert done.stdout.strip() == "" or "retrying" not in done.stdout


async def test_offline_replies_have_a_cap_and_repetition_settings(
    tmp_path: Path, server: ScriptedServer
) -> None:
    # Item 9: the 135M model looped for up to a minute; its requests now carry a reply cap
    # and llama.cpp's repetition penalties, declared in config (local.*) with defaults.
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    config = parse_config(
        {"model": {"provider": "local"}, "local": {"model_path": str(model)}},
        source="test",
        env={},
    )
    if not xllamacpp_installed():
        pytest.skip("the local extra is not installed")
    offline = opened(choose_backend(config, {}).make_client())
    assert offline.max_tokens == 320
    assert offline.extra_body == {"repeat_penalty": 1.15, "frequency_penalty": 0.2}
    # What the client sends with them, over a real socket.
    server.script(s.text("fine"))
    remote = opened(
        ModelClient(
            base_url=server.base_url,
            api_key="k",
            model="m",
            max_tokens=offline.max_tokens,
            extra_body=offline.extra_body,
        )
    )
    await remote.complete([{"role": "user", "content": "hi"}])
    sent = server.requests[-1]
    assert (sent["max_tokens"], sent["repeat_penalty"], sent["frequency_penalty"]) == (
        320,
        1.15,
        0.2,
    )
    # A remote endpoint gets none of them.
    plain = parse_config({"model": {"base_url": server.base_url}}, source="t", env={})
    assert choose_backend(plain, {}).make_client().extra_body is None


def _resumed_notices(home: Path, thread_id: str, server: ScriptedServer) -> list[str]:
    config = parse_config(
        {"model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0}},
        source="t",
        env={},
    )
    from engine.runtime import Runtime
    from tests.support import client_for

    runtime = Runtime.open(config, home, thread_id=thread_id, model=client_for(server))
    notices = list(runtime.notices)
    runtime.thread.close()
    return notices


@pytest.mark.parametrize("how", ["left open", "closed by the quit", "cancelled by Esc"])
def test_resume_says_when_a_quit_interrupted_a_compaction(
    tmp_path: Path, server: ScriptedServer, how: str
) -> None:
    # Item 11: the same classification as the lock's (engine/log/brackets.py): a start the
    # seam found open is stale; one the closing session cancelled was cut off by the quit.
    from engine import events as ev
    from engine.runtime import INTERRUPTED_COMPACTION
    from engine.threads.thread import Thread

    thread = Thread.create(tmp_path, "local", "t-quit")
    thread.log.append(ev.UserMessage(text="hello"))
    start = thread.log.append(ev.CompactStart(turn=None, seqs=[], tokens=0))
    if how == "closed by the quit":
        thread.log.append(
            ev.CompactEnd(start=start.seq, error="summary", cancelled="session closing")
        )
    elif how == "cancelled by Esc":
        thread.log.append(ev.CompactEnd(start=start.seq, error="summary", cancelled="cancelled"))
    thread.close()
    said = _resumed_notices(tmp_path, "t-quit", server).count(INTERRUPTED_COMPACTION)
    assert said == (0 if how == "cancelled by Esc" else 1)
    assert "nothing was lost" in INTERRUPTED_COMPACTION
    # Once: the next resume's seam finds nothing interrupted.
    assert INTERRUPTED_COMPACTION not in _resumed_notices(tmp_path, "t-quit", server)
