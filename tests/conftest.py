"""Shared pytest fixtures."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from devtools.scripted_server import ScriptedServer
from tests.cli_support import Env, write_config
from tests.support import close_all_opened


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A started scripted OpenAI-compatible server, so tests use real sockets and SSE."""
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A port that refuses connections for the whole test: bound, never listening.

    A port bound and released at once can be taken by any process before the
    test connects (another suite's stalled listener made a retry test wait
    out a 600 s read timeout); holding it bound keeps anyone else off it.
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.fixture
def env(tmp_path: Path, server: ScriptedServer) -> Env:
    """A home and a config that point `trove` at the scripted server."""
    config = tmp_path / "config.yaml"
    write_config(config, server.base_url)
    return Env(tmp_path / "home", config)


@pytest.fixture(autouse=True)
def own_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The platform's config dir (read before the data dir) is the test's own, empty:
    a config.yaml in the user's ~/.config never reaches a test (nor the `trove` it runs,
    which inherits the environment)."""
    path = tmp_path / "xdg-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(path))
    return path


@pytest.fixture(autouse=True)
async def close_what_the_test_opened() -> AsyncIterator[None]:
    """Drivers, runtimes and clients a test opened through tests.support are closed here,
    in the test's own loop, even when an assert failed before the test closed them."""
    yield
    await close_all_opened()
