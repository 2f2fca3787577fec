"""A stream the server sends faster than it is read is read without waiting gaps.

Between reads the client gives the UI loop a turn. After a read that had to
wait for the network it used to wait `READ_GAP` so that a slow stream's
tokens gather; but the first read after any turn waits for the loop to hand
the socket's data over, so a fast stream paid a gap per turn and was read at
a fraction of the pace it was sent (a 20,000-token reply at 20,000 tokens/s
was finished a quarter of a second late even with nothing drawing). Now a
read that waits after a large burst gets a short `TURN` instead: the data is
arriving faster than it is read. Counted, not timed: before, about four
turns in five were gaps; now about one in ten is (the server, a thread of
this process, pauses now and then).
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


async def test_a_stream_sent_faster_than_it_is_read_is_read_without_gaps(
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
    gaps, turns = sleeps.lengths.count(_client.READ_GAP), len(sleeps.lengths)
    # A few gaps are right: where the client caught up with the server, the stream paused.
    assert gaps * 3 <= turns, f"{gaps} of the {turns} turns given to the loop were gaps"
