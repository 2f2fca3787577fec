"""The one client every backend goes through: streaming chat completions via `openai`.

`openai` is imported lazily (and off the event loop) because importing it
takes about a second, which must not delay start-up or stall keystrokes.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

import orjson

from engine.model._errors import cut_off, empty, malformed, translate
from engine.model._received import Received
from engine.model._sse import EventSplitter
from engine.model._stream import Completion, StreamReader
from engine.model._wire import encode_body

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
READ_GAP = 0.005
"""Seconds a stream waits, after a read that had to wait for the network, before reading again.

A server sends one event per token, and each read as it comes wakes the UI loop.
Waiting lets tokens gather, then the buffered ones are read without waking: at most
one wake per gap, and the text is at most a gap later.
"""
WAITED = 0.0003
"""A read taking this long waited for the network (a buffered read takes microseconds)."""
TURN = 0.001
"""Seconds the UI loop gets to itself between two stretches of a fast stream's reading."""
FAST_BURST = 16384
"""Bytes read since the loop last had a turn from which a stream counts as fast: a read
that then waits gives the loop a turn but no `READ_GAP` (the data is arriving faster than
it is read, and a gap would only let the reader fall behind)."""


def _loads(data: bytes) -> Any:
    """One data line's JSON. orjson refuses an escaped lone surrogate, which JSON allows
    (a model that splits a character's surrogate pair sends one): the standard library
    reads those lines, and the text's consumers turn the surrogate into U+FFFD."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        try:
            return json.loads(data)
        except RecursionError:  # nested past what orjson allows: still not a chunk
            raise exc from None


class ModelObserver(Protocol):
    """Who hears what a request waits on (engine.runtime.relay's DriverRelay is one)."""

    def on_retry(self, attempt: int, attempts: int) -> None:
        """A retry (attempt of attempts) starts, so a front end can say so."""

    def on_model_status(self, text: str) -> None:
        """What the client waits on before a request ("starting the offline model…"),
        then "" once it is over."""


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
        connect_timeout: float = 3.0,
        extra_body: dict[str, Any] | None = None,
        observer: ModelObserver | None = None,
    ) -> None:
        self.base_url = base_url or None
        self.api_key = api_key or None
        self.model = model
        self.max_retries = max_retries
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_tokens = max_tokens
        self.extra_body = extra_body
        """Fields the endpoint accepts beyond the OpenAI schema (llama.cpp's penalties)."""
        self.observer = observer
        self._client: openai.AsyncOpenAI | None = None
        self._openai: Any = None
        self._raw: type[Any] = object
        """The SDK's HTTP response class: asked for, `post` returns the response unread."""

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
        # A worker thread keeps the slow import, the TLS context (CA bundle) and
        # the SDK's lazily imported resource modules from freezing the UI loop.
        mod, client = await asyncio.to_thread(self._build)
        if self._client is not None:  # another caller finished first
            return
        self._openai = mod
        self._raw = _raw_response_type(mod)
        self._client = client

    def _build(self) -> tuple[Any, Any]:
        mod = import_openai()
        # No fallback to $OPENAI_API_KEY here: the config reads it (visibly) for `model:`,
        # and a `models:` entry with an endpoint of its own must not send it elsewhere.
        key = self.api_key or _PLACEHOLDER_KEY
        client = mod.AsyncOpenAI(
            base_url=self.base_url,
            api_key=key,
            max_retries=self.max_retries,
            # A dead host should fail in seconds, while a slow model may take minutes.
            timeout=mod.Timeout(self.timeout, connect=min(self.timeout, self.connect_timeout)),
            # The SDK retries inside one call; a hook on each request is where a retry shows.
            http_client=_http_client(mod, event_hooks={"request": [self._attempt]}),
        )
        # So does the HTTP transport's first request, its async backend: here too, not on
        # the loop as the first request goes out.
        with contextlib.suppress(ImportError):
            importlib.import_module("anyio._backends._asyncio")
        return mod, client

    async def _attempt(self, request: Any) -> None:
        """Each HTTP attempt passes here; the SDK numbers its retries in a header."""
        try:
            retries = int(request.headers.get("x-stainless-retry-count") or 0)
        except ValueError:
            return
        if retries > 0 and self.observer is not None:
            self.observer.on_retry(retries + 1, self.max_retries + 1)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        on_delta: Callable[[str], None] | None = None,
        model: str | None = None,
        on_reasoning: Callable[[str], None] | None = None,
    ) -> Completion:
        """Stream one chat completion, reporting text through ``on_delta`` as it arrives,
        and a reasoning model's thinking through ``on_reasoning``.

        If the calling task is cancelled, ``CancelledError`` propagates after the
        HTTP response is closed; the caller already holds the partial text (and
        thinking) it was given through ``on_delta`` (``on_reasoning``).
        """
        await self.prepare()
        assert self._client is not None
        oa = self._openai
        name = model or self.model
        # The body is encoded here, not by the SDK: its typed transform and its one-call
        # JSON encoding each walk every message on the UI loop, a cost per request that
        # grows with the thread (bench/request_cost.py). The configured extra body goes
        # over the standard fields, as the SDK's `extra_body` would.
        body: dict[str, Any] = {
            "model": name,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = tools
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(self.extra_body or {})
        content = await encode_body(body)

        reader = StreamReader(served_model=name)
        started = False
        try:
            response = await self._client.post(
                "/chat/completions", cast_to=self._raw, content=content, stream=True
            )
            started = True  # headers arrived: a later connection error is a torn reply
            try:
                await self._read(response, reader, name, on_delta, on_reasoning)
            finally:
                await response.aclose()
        except oa.APIError as exc:
            raise translate(
                exc,
                oa,
                url=self.display_url,
                model=name,
                started=started,
                timeout=self.timeout,
                max_retries=self.max_retries,
                connect_timeout=self.connect_timeout,
            ) from exc
        finally:
            _told(reader.end(), on_delta, on_reasoning)  # however it ended: nothing held back

        completion = reader.completion()
        if not completion.content.strip() and not completion.tool_calls:
            raise empty(
                self.display_url,
                name,
                saw_choice=reader.saw_choice,
                finish=reader.finish,
                thought=bool(completion.reasoning.strip()),
                unclosed=reader.inline.unclosed,
            )
        return completion

    async def _read(
        self,
        http: Any,
        reader: StreamReader,
        model: str,
        on_delta: Callable[[str], None] | None,
        on_reasoning: Callable[[str], None] | None = None,
    ) -> None:
        """Fold the event stream into ``reader``, one observer call per batch of bytes
        taken (`Received`: everything that arrived since the last).

        Whatever text a batch held reaches ``on_delta`` before anything it held
        fails the reply, so the caller always has the partial text; its thinking
        reaches ``on_reasoning`` first (a model thinks before it answers). A stream
        that ends with neither ``[DONE]`` nor a finish reason was cut off and
        fails; one with a finish reason but no ``[DONE]`` is whole (some
        servers never send it).
        """
        received = Received(http.aiter_bytes())
        try:
            await self._fold(http, received, reader, model, on_delta, on_reasoning)
        finally:
            await received.aclose()

    async def _fold(
        self,
        http: Any,
        received: Received,
        reader: StreamReader,
        model: str,
        on_delta: Callable[[str], None] | None,
        on_reasoning: Callable[[str], None] | None,
    ) -> None:
        oa = self._openai
        timeouts, transport = _transport_errors(oa)
        splitter = EventSplitter()
        loads = _loads
        last_yield = time.monotonic()
        burst = 0
        while True:
            asked = time.monotonic()
            try:
                raw = await received.take()
            except StopAsyncIteration:
                if reader.finish is None:
                    raise cut_off(self.display_url, model) from None
                return
            except timeouts as exc:
                raise oa.APITimeoutError(request=http.request) from exc
            except transport as exc:
                raise oa.APIConnectionError(request=http.request) from exc
            pieces: list[str] = []
            thoughts: list[str] = []
            done = False
            try:
                for data in splitter.feed(raw):
                    if data.startswith(b"[DONE]"):
                        done = True
                        break
                    try:
                        chunk = loads(data)
                    except ValueError as exc:  # both decoders' errors are ValueErrors
                        what = "a data line is not valid JSON"
                        raise malformed(self.display_url, model, what) from exc
                    if isinstance(chunk, dict) and chunk.get("error"):
                        raise _stream_error(oa, http.request, chunk["error"])
                    try:
                        thought, piece = reader.feed(chunk)
                    except (AttributeError, TypeError, ValueError) as exc:
                        what = "a chunk is not a chat completion"
                        raise malformed(self.display_url, model, what) from exc
                    if thought:
                        thoughts.append(thought)
                    if piece:
                        pieces.append(piece)
            finally:
                if thoughts and on_reasoning is not None:
                    on_reasoning("".join(thoughts))
                if pieces and on_delta is not None:
                    on_delta("".join(pieces))
            if done:
                await received.drain()
                return
            now = time.monotonic()
            burst += len(raw)
            waited = now - asked > WAITED
            if waited and burst < FAST_BURST:
                await asyncio.sleep(READ_GAP)
                last_yield, burst = time.monotonic(), 0
            elif waited or now - last_yield > YIELD_EVERY:
                # Reads already buffered return without a suspension point; a turn of
                # the loop (sleep(0)) is one step of each task, too little for frames and
                # keystrokes: they get `TURN`, the reader the rest.
                await asyncio.sleep(TURN)
                last_yield, burst = time.monotonic(), 0

    async def aclose(self) -> None:
        """Release pooled connections; safe to call when no request was ever made."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()


def _http_client(mod: Any, **options: Any) -> Any:
    """The SDK's HTTP client over aiohttp (the `openai[aiohttp]` extra), else over httpx.

    A server streams one chunk per token, and httpx's HTTP/1.1 parser hands a body over
    a chunk at a time, each through a stack of async generators; aiohttp parses in C and
    hands over whatever arrived, so a read takes every token buffered at once
    (bench/stream_read.py prints what reading a fast stream costs).
    """
    try:
        return mod.DefaultAioHttpClient(**options)
    except RuntimeError:  # installed without the extra
        return mod.DefaultAsyncHttpxClient(**options)


ClientFactory = Callable[[ModelObserver], ModelClient]
"""Makes a runtime's client, given who hears its retries and status (`Backend.make_client`)."""


def _told(
    held: tuple[str, str],
    on_delta: Callable[[str], None] | None,
    on_reasoning: Callable[[str], None] | None,
) -> None:
    """What the stream's reader held back to its end, told as the rest was."""
    thought, text = held
    if thought and on_reasoning is not None:
        on_reasoning(thought)
    if text and on_delta is not None:
        on_delta(text)


def _stream_error(oa: Any, request: Any, error: Any) -> Exception:
    """An error object inside a 200 stream, raised as the SDK raises it (then translated)."""
    message = error.get("message") if isinstance(error, dict) else None
    if not message or not isinstance(message, str):
        message = "An error occurred during streaming"
    return cast(Exception, oa.APIError(message=message, request=request, body=error))


def _raw_response_type(oa: Any) -> type[Any]:
    """The HTTP response class the SDK hands back as it is (httpx2's, or httpx's before)."""
    helpers = getattr(oa, "_httpx2", None)
    if helpers is not None and hasattr(helpers, "http_response_types"):
        return cast("type[Any]", helpers.http_response_types()[0])
    return cast("type[Any]", importlib.import_module("httpx").Response)


def _transport_errors(oa: Any) -> tuple[tuple[type[BaseException], ...], ...]:
    """Which read failures are timeouts and which are lost connections.

    The SDK's own classification, so a torn raw stream fails exactly as its
    parsed stream did; the builtin families when the SDK does not expose it.
    """
    helpers = getattr(oa, "_httpx2", None)
    if helpers is not None and hasattr(helpers, "timeout_exceptions"):
        return helpers.timeout_exceptions(), helpers.request_exceptions()
    return (TimeoutError,), (OSError,)
