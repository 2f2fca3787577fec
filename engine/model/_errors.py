"""What a failed model call becomes: one line a user can act on, and a kind for policy.

The wording names the server and the model, because with several backends
configured the first question is always which one failed.
"""

from __future__ import annotations

import re
from typing import Any

from engine.errors import TroveError

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


class ModelError(TroveError):
    """A model call failed; ``str(e)`` is one line saying what failed and what to do.

    ``kind`` lets callers decide policy (retry later, compact, tell the user)
    without parsing the message: ``auth``, ``not_found``, ``unreachable``,
    ``rate_limit``, ``server``, ``bad_request``, ``timeout``, ``overflow``,
    ``malformed`` (the stream is not chat completions), ``empty`` (no answer) or
    ``cut_off`` (the server ended the stream before the reply was finished).
    """

    def __init__(self, kind: str, message: str, *, status: int | None = None) -> None:
        super().__init__(_one_line(message, limit=400))
        self.kind = kind
        self.status = status


class ContextOverflowError(ModelError):
    """The prompt did not fit the model's context window; compaction retries on it."""

    def __init__(self, message: str, *, status: int | None = 400) -> None:
        super().__init__("overflow", message, status=status)


def malformed(url: str, model: str, what: str) -> ModelError:
    """Bytes that are not an OpenAI-compatible stream: name the server, not the parser."""
    return ModelError(
        "malformed",
        f"the model server at {url} sent a malformed stream ({what}; "
        f"model '{model}'): check that model.base_url is an OpenAI-compatible endpoint",
    )


def empty(
    url: str,
    model: str,
    *,
    saw_choice: bool,
    finish: str | None,
    thought: bool = False,
    unclosed: bool = False,
) -> ModelError:
    """A finished stream with nothing in it must not pass for an answer (nor one that
    only thought: its thinking is no reply; nor one whose inline `<think>` never closed,
    which is said, as the thinking it shows may be the answer the model meant)."""
    if not saw_choice:
        why = "the stream held no choices"
    elif finish == "length":
        why = "it stopped at its token limit (model.max_tokens)"
        why += " while it was still thinking" if thought else ""
    elif finish == "content_filter":
        why = "the server's content filter stopped it"
    elif unclosed:
        why = "its <think> was never closed: all it wrote is shown as thinking"
    elif thought:
        why = "it only thought: no text and no tool calls after its thinking"
    else:
        why = "no text and no tool calls"
    return ModelError(
        "empty",
        f"the model returned an empty answer ({why}; model '{model}' at {url}): try again",
    )


def cut_off(url: str, model: str) -> ModelError:
    """A stream that ended without a finish reason or ``[DONE]``: the reply is not whole.

    The connection closed cleanly, so no transport error said so; without this
    the text so far would pass for the whole answer. The line begins the same
    for every server, so a user (or a script reading stderr) can tell it apart.
    """
    return ModelError(
        "cut_off",
        "reply cut off: the server closed the stream before the reply ended"
        f" (no finish reason, no [DONE]; model '{model}' at {url}): try again",
    )


def translate(
    exc: Exception,
    oa: Any,
    *,
    url: str,
    model: str,
    started: bool,
    timeout: float,
    max_retries: int,
    connect_timeout: float | None = None,
) -> ModelError:
    """Turn an SDK error into one actionable line naming the server and model.

    `oa` is the openai module, passed in because it is imported lazily.
    """
    lost = _lost_as_timeout(exc)
    if isinstance(exc, oa.APITimeoutError) and not lost:
        if started:
            # The SDK's read timeout applies to every read, so this is a stall.
            return ModelError(
                "timeout",
                f"the model server at {url} stopped sending mid-reply (nothing for"
                f" {timeout:g}s, model '{model}'): try again or raise model.timeout",
            )
        if connect_timeout is not None and type(exc.__cause__).__name__ == "ConnectTimeout":
            return ModelError(
                "unreachable",
                f"cannot reach the model server at {url}: no connection within"
                f" {connect_timeout:g}s (model.connect_timeout); is it running?",
            )
        return ModelError(
            "timeout",
            f"the model server at {url} did not answer within {timeout:g}s"
            f" (model '{model}'): try again or raise model.timeout",
        )
    if isinstance(exc, oa.APIConnectionError) or lost:
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
    retries = f" after {max_retries} retries" if max_retries else ""
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


def _lost_as_timeout(exc: Exception) -> bool:
    """A lost or refused connection that the SDK reports as a timeout.

    The aiohttp transport maps every failed connection to a connect timeout; its own
    error, the cause's cause, says whether time ran out or the connection failed.
    """
    root = exc.__cause__.__cause__ if exc.__cause__ is not None else None
    return type(root).__module__.startswith("aiohttp") and not isinstance(root, TimeoutError)
