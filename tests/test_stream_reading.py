"""A stream the server sends faster than it is read is read in batches, never a token at a time.

The body is taken by a task of its own (engine.model._received) as it arrives, and the
reader hands over everything taken since its last turn: a fast stream costs a
parse per token but one observer call per batch, and the reader never waits on the
network while tokens are waiting for it. Between batches the loop gets a turn;
after a batch that had to wait for the network the reader waits `READ_GAP` so a
slow stream's tokens gather (where the client caught up with the server). Counted,
not timed: a 20,000-token reply sent unpaced arrives in a few hundred batches.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtools import scripted_server as s
from engine.model import _client
from tests.support import client_for


class _Sleeps:
    """asyncio for the client module, counting its sleeps by length."""

    def __init__(self) -> None:
        self.lengths: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    async def sleep(self, seconds: float) -> None:
        self.lengths.append(seconds)
        await asyncio.sleep(seconds)


async def test_a_stream_sent_faster_than_it_is_read_is_read_in_batches(
    server: s.ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    reply = s.words(20_000)  # unpaced: the server writes as fast as it can
    server.script(reply)
    sleeps = _Sleeps()
    monkeypatch.setattr(_client, "asyncio", sleeps)
    client = client_for(server)
    try:
        pieces: list[str] = []
        completion = await client.complete(
            [{"role": "user", "content": "go"}], on_delta=pieces.append
        )
    finally:
        await client.aclose()
    assert completion.content == reply.content == "".join(pieces)
    assert len(pieces) * 10 <= len(reply.pieces), f"{len(pieces)} batches"
    assert len(sleeps.lengths) <= len(pieces)  # a turn between batches, not within one
