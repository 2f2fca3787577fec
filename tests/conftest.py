"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scripted_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A started scripted OpenAI-compatible server, so tests use real sockets and SSE."""
    with ScriptedServer() as srv:
        yield srv
