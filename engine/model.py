"""The OpenAI-compatible model client: one streaming code path for every backend.

Every backend Trove supports (OpenAI, DeepSeek, vLLM, Ollama, llama.cpp, the
``local`` extra) speaks chat completions over HTTP, so the engine has exactly
one client. It always streams, so the UI can render text as it arrives and a
cancelled turn still keeps what was said. Failures become a :class:`ModelError`
whose text is one line a user can act on, never an SDK traceback.

``openai`` is imported lazily (and off the event loop) because importing it
takes about a second, which must not delay start-up or stall keystrokes.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import openai

__all__ = [
    "Completion",
    "ContextOverflowError",
    "ModelClient",
    "ModelError",
    "ToolCall",
]

# Sent when no key is configured: the SDK refuses to construct without one,
# and local servers (Ollama, llama.cpp, vLLM) accept any value.
_PLACEHOLDER_KEY = "no-key"
_MAX_DETAIL = 200
# How servers phrase "the prompt does not fit": OpenAI/DeepSeek/vLLM ("maximum
# context length"), llama.cpp ("exceeds the available context size"),
# Anthropic-style proxies ("prompt is too long"), and generic "too many tokens".
_OVERFLOW_RE = re.compile(
    r"context[ _-]?(length|size|window)|maximum context|too many tokens|"
    r"prompt is too long|too long for the model|reduce the length",
    re.IGNORECASE,
)
_OVERFLOW_CODES = {
    "context_length_exceeded",
    "exceed_context_size_error",
    "string_above_max_length",
}


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


class ModelError(Exception):
    """A model call failed; ``str(e)`` is one line saying what failed and what to do.

    ``kind`` lets callers decide policy (retry later, compact, tell the user)
    without parsing the message: ``auth``, ``not_found``, ``unreachable``,
    ``rate_limit``, ``server``, ``bad_request``, ``timeout``, ``overflow``,
    ``malformed`` (the stream is not chat completions) or ``empty`` (no answer).
    """

    def __init__(self, kind: str, message: str, *, status: int | None = None) -> None:
        super().__init__(_one_line(message, limit=400))
        self.kind = kind
        self.status = status


class ContextOverflowError(ModelError):
    """The prompt did not fit the model's context window; compaction retries on it."""

    def __init__(self, message: str, *, status: int | None = 400) -> None:
        super().__init__("overflow", message, status=status)


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the model sent it; ``arguments`` is the raw JSON text.

    Arguments stay unparsed so the tool layer can report malformed JSON from the
    model as a tool error instead of the client failing the whole turn.
    """

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Completion:
    """The assembled result of one streamed request."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    finish_reason: str | None = None
    model: str = ""


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamReader:
    """Folds streamed chunks into one completion, refusing shapes it cannot trust.

    A value of the wrong type raises ``TypeError`` here, which the client reports
    as a malformed stream, instead of surfacing later as a confusing failure.
    """

    served_model: str
    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    usage: dict[str, Any] | None = None
    finish: str | None = None
    saw_choice: bool = False

    def feed(self, chunk: Any) -> str:
        """Take one chunk; returns its text, for the caller to show."""
        if getattr(chunk, "model", None):
            self.served_model = _str_or_none(chunk.model) or self.served_model
        if chunk.usage is not None:
            self.usage = chunk.usage.model_dump(exclude_none=True)
        choices = chunk.choices or ()
        if not isinstance(choices, list | tuple):
            raise TypeError("choices is not a list")
        pieces: list[str] = []
        for choice in choices:
            self.saw_choice = True
            if choice.finish_reason:
                self.finish = _str_or_none(choice.finish_reason)
            delta = choice.delta
            if delta is None:
                continue
            content = _str_or_none(delta.content)
            if content:
                pieces.append(content)
            for tc in delta.tool_calls or ():
                _merge_call(self.calls, tc)
        piece = "".join(pieces)
        if piece:
            self.text.append(piece)
        return piece

    def completion(self) -> Completion:
        tool_calls = [
            ToolCall(id=c.id or f"call_{i}", name=c.name, arguments="".join(c.arguments))
            for i, c in sorted(self.calls.items())
        ]
        return Completion(
            content="".join(self.text),
            tool_calls=tool_calls,
            usage=self.usage,
            finish_reason=self.finish,
            model=self.served_model,
        )


def _str_or_none(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"expected text, got {type(value).__name__}")


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

        reader = _StreamReader(served_model=name)
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
                        raise self._malformed(name, "a data line is not valid JSON") from exc
                    now = time.monotonic()
                    if now - last_yield > YIELD_EVERY:
                        # Chunks already buffered are parsed without a suspension
                        # point; yield so keystrokes and frames are not starved.
                        await asyncio.sleep(0)
                        last_yield = time.monotonic()
                    try:
                        piece = reader.feed(chunk)
                    except (AttributeError, TypeError, ValueError) as exc:
                        raise self._malformed(name, "a chunk is not a chat completion") from exc
                    if piece and on_delta is not None:
                        on_delta(piece)
        except oa.APIError as exc:
            raise self._translate(exc, name, started) from exc

        completion = reader.completion()
        if not completion.content.strip() and not completion.tool_calls:
            raise self._empty(name, reader)
        return completion

    async def aclose(self) -> None:
        """Release pooled connections; safe to call when no request was ever made."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    # -- error mapping ---------------------------------------------------------

    def _malformed(self, model: str, what: str) -> ModelError:
        """Bytes that are not an OpenAI-compatible stream: name the server, not the parser."""
        return ModelError(
            "malformed",
            f"the model server at {self.display_url} sent a malformed stream ({what}; "
            f"model '{model}'): check that model.base_url is an OpenAI-compatible endpoint",
        )

    def _empty(self, model: str, reader: _StreamReader) -> ModelError:
        """A finished stream with nothing in it must not pass for an answer."""
        if not reader.saw_choice:
            why = "the stream held no choices"
        elif reader.finish == "length":
            why = "it stopped at its token limit (model.max_tokens)"
        elif reader.finish == "content_filter":
            why = "the server's content filter stopped it"
        else:
            why = "no text and no tool calls"
        return ModelError(
            "empty",
            f"the model returned an empty answer ({why}; model '{model}' at {self.display_url})"
            ": try again",
        )

    def _translate(self, exc: Exception, model: str, started: bool) -> ModelError:
        """Turn an SDK error into one actionable line naming the server and model."""
        oa = self._openai
        url = self.display_url
        if isinstance(exc, oa.APITimeoutError):
            if started:
                # The SDK's read timeout applies to every read, so this is a stall.
                return ModelError(
                    "timeout",
                    f"the model server at {url} stopped sending mid-reply (nothing for"
                    f" {self.timeout:g}s, model '{model}'): try again or raise model.timeout",
                )
            return ModelError(
                "timeout",
                f"the model server at {url} did not answer within {self.timeout:g}s"
                f" (model '{model}'): try again or raise model.timeout",
            )
        if isinstance(exc, oa.APIConnectionError):
            if started:
                return ModelError(
                    "unreachable",
                    f"lost the connection to the model server at {url} mid-reply: try again",
                )
            return ModelError(
                "unreachable",
                f"cannot reach the model server at {url}: is it running? (set model.base_url)",
            )
        message = _server_message(exc)
        detail = _one_line(message, limit=_MAX_DETAIL)
        if not isinstance(exc, oa.APIStatusError):
            # An error event inside an otherwise successful stream.
            if _is_overflow(exc, message):
                return ContextOverflowError(
                    f"the prompt is too long for model '{model}' at {url}: {detail}", status=None
                )
            return ModelError("server", f"the model server at {url} reported an error: {detail}")

        status = exc.status_code
        retries = f" after {self.max_retries} retries" if self.max_retries else ""
        if status in (401, 403):
            return ModelError(
                "auth",
                f"model server at {url} rejected the API key ({status}): "
                "set model.api_key or OPENAI_API_KEY",
                status=status,
            )
        if status == 404:
            return ModelError(
                "not_found",
                f"model '{model}' not found at {url} (404): check model.name and model.base_url",
                status=status,
            )
        if status == 413 or (400 <= status < 500 and _is_overflow(exc, message)):
            return ContextOverflowError(
                f"the prompt is too long for model '{model}' at {url} ({status}): {detail}",
                status=status,
            )
        if status == 429:
            return ModelError(
                "rate_limit",
                f"model server at {url} is rate limiting requests (429){retries}: "
                f"wait and try again ({detail})",
                status=status,
            )
        if status >= 500:
            return ModelError(
                "server",
                f"model server at {url} failed ({status}){retries}: {detail}",
                status=status,
            )
        return ModelError(
            "bad_request",
            f"model server at {url} refused the request for model '{model}' ({status}): {detail}",
            status=status,
        )


def _merge_call(calls: dict[int, _PartialCall], tc: Any) -> None:
    """Fold one streamed tool-call fragment into the call it belongs to (by ``index``).

    Some servers omit ``index``; a fragment with a new id then starts a call and
    one without continues the latest, which is how those servers stream.
    """
    index = tc.index
    if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
        raise TypeError("tool call index is not an integer")
    if index is None:
        by_id = {c.id: i for i, c in calls.items() if c.id}
        last = max(calls, default=-1)
        index = by_id.get(tc.id, last + 1) if tc.id else max(last, 0)
    part = calls.setdefault(index, _PartialCall())
    if _str_or_none(tc.id):
        part.id = tc.id
    fn = tc.function
    if fn is None:
        return
    name, arguments = _str_or_none(fn.name), _str_or_none(fn.arguments)
    if name and name != part.name:
        # Names normally arrive whole in the first fragment; a few servers repeat them.
        part.name = name if not part.name else part.name + name
    if arguments:
        part.arguments.append(arguments)


def _server_message(exc: Exception) -> str:
    """The server's own message rather than the SDK's "Error code: …" wrapper text."""
    body = getattr(exc, "body", None)
    message = None
    if isinstance(body, dict):
        message = body.get("message")
        if not isinstance(message, str) and isinstance(body.get("error"), dict):
            message = body["error"].get("message")
    if not isinstance(message, str) or not message.strip():
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return str(message)


def _is_overflow(exc: Exception, message: str) -> bool:
    """Recognise a context overflow by its code, or by wording for servers without codes."""
    code = getattr(exc, "code", None)
    return (isinstance(code, str) and code in _OVERFLOW_CODES) or bool(_OVERFLOW_RE.search(message))


def _one_line(text: str, *, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
