"""The one client every backend goes through: streaming chat completions via `openai`.

`openai` is imported lazily (and off the event loop) because importing it
takes about a second, which must not delay start-up or stall keystrokes.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.model._errors import empty, malformed, translate
from engine.model._stream import Completion, StreamReader

if TYPE_CHECKING:
    import openai

# Sent when no key is configured: the SDK refuses to construct without one,
# and local servers (Ollama, llama.cpp, vLLM) accept any value.
_PLACEHOLDER_KEY = "no-key"

_IMPORT_LOCK = threading.Lock()


def import_openai() -> Any:
    """The openai module, imported once even when callers race from two threads.

    `"openai" in sys.modules` is true as soon as an import *starts*, so a
    second caller must not take the module from there: it waits on this lock
    until the first import has finished executing.
    """
    with _IMPORT_LOCK:
        return importlib.import_module("openai")


YIELD_EVERY = 0.004
"""Seconds of stream parsing after which the event loop gets a turn."""


class ModelClient:
    """A thin, lazily built wrapper over ``openai.AsyncOpenAI`` for chat completions.

    Retries of 429, 5xx and connection failures are left to the SDK (bounded by
    ``max_retries``) so there is one retry policy, honouring ``Retry-After``.
    """

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        model: str,
        max_retries: int = 2,
        timeout: float = 600.0,
        max_tokens: int | None = None,
    ) -> None:
        self.base_url = base_url or None
        self.api_key = api_key or None
        self.model = model
        self.max_retries = max_retries
        self.timeout = timeout
        self.max_tokens = max_tokens
        self._client: openai.AsyncOpenAI | None = None
        self._openai: Any = None

    @property
    def display_url(self) -> str:
        """The endpoint errors name, so the user sees which server the message is about."""
        if self._client is not None:
            return str(self._client.base_url).rstrip("/")
        url = self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        return url.rstrip("/")

    async def prepare(self) -> None:
        """Import ``openai`` and build the SDK client ahead of the first turn.

        Front ends may call this in the background after start-up so the first
        request does not pay the import; ``complete`` calls it anyway.
        """
        if self._client is not None:
            return
        # A worker thread keeps the ~1 s import from freezing the UI loop.
        mod = await asyncio.to_thread(import_openai)
        if self._client is not None:  # another caller finished first
            return
        key = self.api_key or os.environ.get("OPENAI_API_KEY") or _PLACEHOLDER_KEY
        self._openai = mod
        self._client = mod.AsyncOpenAI(
            base_url=self.base_url,
            api_key=key,
            max_retries=self.max_retries,
            # A dead host should fail in seconds, while a slow model may take minutes.
            timeout=mod.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
        )

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        on_delta: Callable[[str], None] | None = None,
        model: str | None = None,
    ) -> Completion:
        """Stream one chat completion, reporting text through ``on_delta`` as it arrives.

        If the calling task is cancelled, ``CancelledError`` propagates after the
        HTTP response is closed; the caller already holds the partial text it
        was given through ``on_delta``.
        """
        await self.prepare()
        assert self._client is not None
        oa = self._openai
        name = model or self.model
        kwargs: dict[str, Any] = {
            "model": name,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            kwargs["tools"] = tools
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens

        reader = StreamReader(served_model=name)
        started = False
        try:
            stream = await self._client.chat.completions.create(**kwargs)
            started = True  # headers arrived: a later connection error is a torn reply
            async with stream:
                chunks = stream.__aiter__()
                last_yield = time.monotonic()
                while True:
                    try:
                        chunk = await anext(chunks)
                    except StopAsyncIteration:
                        break
                    except ValueError as exc:  # a data line that is not JSON
                        what = "a data line is not valid JSON"
                        raise malformed(self.display_url, name, what) from exc
                    now = time.monotonic()
                    if now - last_yield > YIELD_EVERY:
                        # Chunks already buffered are parsed without a suspension
                        # point; yield so keystrokes and frames are not starved.
                        await asyncio.sleep(0)
                        last_yield = time.monotonic()
                    try:
                        piece = reader.feed(chunk)
                    except (AttributeError, TypeError, ValueError) as exc:
                        what = "a chunk is not a chat completion"
                        raise malformed(self.display_url, name, what) from exc
                    if piece and on_delta is not None:
                        on_delta(piece)
        except oa.APIError as exc:
            raise translate(
                exc,
                oa,
                url=self.display_url,
                model=name,
                started=started,
                timeout=self.timeout,
                max_retries=self.max_retries,
            ) from exc

        completion = reader.completion()
        if not completion.content.strip() and not completion.tool_calls:
            raise empty(self.display_url, name, saw_choice=reader.saw_choice, finish=reader.finish)
        return completion

    async def aclose(self) -> None:
        """Release pooled connections; safe to call when no request was ever made."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()
