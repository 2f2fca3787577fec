"""A response body taken as it arrives, by a task of its own, and handed over in batches.

aiohttp's body reader raises a lost connection's error before the bytes it already
holds, so a reader that pauses between reads (the stream's reader does, to let tokens
gather) would lose the last text a server sent before it went away. The pump here waits
on the body at all times and keeps what it takes; `take` hands over everything gathered
since it was last called, and only then the body's end or its error.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class Received:
    """The bytes of one response body, pumped from ``body`` as they arrive."""

    def __init__(self, body: AsyncIterator[bytes]) -> None:
        self._chunks: list[bytes] = []
        self._error: Exception | None = None
        self._ended = False
        self._waiter: asyncio.Future[None] | None = None
        self._pump = asyncio.create_task(self._read(body), name="response body")

    async def _read(self, body: AsyncIterator[bytes]) -> None:
        try:
            async for raw in body:
                if raw:
                    self._chunks.append(raw)
                    self._wake()
        except Exception as exc:  # told after the bytes taken before it
            self._error = exc
        finally:
            self._ended = True
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def take(self) -> bytes:
        """Every byte received since the last call, waiting for the next if there is
        none; at the body's end ``StopAsyncIteration``, or the error that ended it."""
        while not self._chunks:
            if self._error is not None:
                raise self._error
            if self._ended:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        chunks, self._chunks = self._chunks, []
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def drain(self) -> None:
        """Read the rest of the body and drop it (an HTTP/1.1 connection read to its end
        goes back to the pool); its errors are of no interest by then."""
        self._chunks.clear()
        with contextlib.suppress(Exception):
            await self._pump
        self._chunks.clear()

    async def aclose(self) -> None:
        """Stop reading (a no-op once the body ended)."""
        if not self._pump.done():
            self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._pump
