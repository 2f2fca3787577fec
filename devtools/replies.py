"""The replies a ScriptedServer can be scripted with: one value type and its builders."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

HoldMode = Literal[False, True, "before", "answer"]
Framing = Literal["chunked", "close"]
ReasoningField = Literal["reasoning_content", "reasoning"]
"""Where a delta carries the model's thinking: DeepSeek's API and older vLLM send
``reasoning_content``; Ollama, newer vLLM and llama.cpp's server can send ``reasoning``."""

_DEFAULT_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "invalid_request_error",
    429: "rate_limit_error",
}


@dataclass(frozen=True)
class Reply:
    """One scripted answer; built by :func:`text`, :func:`tool_calls`, :func:`error` …

    A single value type keeps the queue simple and lets tests compare or reuse
    replies; the constructors below are the intended way to make one.
    """

    kind: Literal[
        "text",
        "tool_calls",
        "error",
        "drop",
        "reset",
        "malformed",
        "empty",
        "choiceless",
        "cutoff",
    ]
    pieces: tuple[str, ...] = ()
    calls: tuple[tuple[str, str], ...] = ()
    usage: dict[str, Any] | None = None
    hold: HoldMode = False
    per_second: float | None = None
    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: str = ""
    """For ``malformed``: the data line sent where a chunk belongs."""
    done: bool = True
    """False: a whole reply (finish reason, usage) whose stream ends without ``[DONE]``."""
    cut: int | None = None
    """For ``cutoff``: how many deltas are sent before the body ends (None: all of them)."""
    framing: Framing = "chunked"
    """For ``cutoff``: how the body ends. ``chunked``: its terminating chunk, as a proxy
    ends a response its upstream abandoned; ``close``: a body without length or chunks,
    ended by closing the connection."""
    reasoning: tuple[str, ...] = ()
    """Thinking streamed before the text, one delta per piece (a reasoning model's)."""
    reasoning_field: ReasoningField = "reasoning_content"
    """The delta field the thinking comes in."""

    @property
    def content(self) -> str:
        """The full assistant text, so assertions need not re-join the pieces."""
        return "".join(self.pieces)

    @property
    def thought(self) -> str:
        """The full thinking streamed before the text."""
        return "".join(self.reasoning)


def pieces(content: str, size: int) -> tuple[str, ...]:
    size = max(1, size)
    return tuple(content[i : i + size] for i in range(0, len(content), size))


def text(
    content: str,
    *,
    chunk_chars: int = 4,
    usage: dict[str, Any] | None = None,
    hold: HoldMode = False,
    per_second: float | None = None,
    done: bool = True,
    reasoning: str = "",
    reasoning_field: ReasoningField = "reasoning_content",
) -> Reply:
    """A streamed assistant message, split small so clients see many deltas.

    ``hold=True`` sends headers and the first chunk and then waits for
    :meth:`ScriptedServer.release`; ``hold="before"`` waits before sending any
    byte; ``hold="answer"`` waits after the thinking, before the first text.
    ``per_second`` paces the chunks (for benchmarks, never for tests).
    ``done=False`` leaves out the final ``[DONE]``, as some servers do.
    ``reasoning`` is thinking streamed first, in ``reasoning_field`` deltas.
    """
    return Reply(
        kind="text",
        pieces=pieces(content, chunk_chars),
        usage=usage,
        hold=hold,
        per_second=per_second,
        done=done,
        reasoning=pieces(reasoning, chunk_chars) if reasoning else (),
        reasoning_field=reasoning_field,
    )


def words(n: int, *, per_second: float | None = None) -> Reply:
    """A long reply of ``n`` one-word chunks, the unit a benchmark counts as a token."""
    vocab = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
    pieces = tuple((vocab[i % len(vocab)] + ("\n\n" if i % 40 == 39 else " ")) for i in range(n))
    return Reply(kind="text", pieces=pieces, per_second=per_second)


def tool_calls(
    calls: Sequence[tuple[str, dict[str, Any] | str]],
    *,
    content: str = "",
    reasoning: str = "",
    reasoning_field: ReasoningField = "reasoning_content",
) -> Reply:
    """Assistant tool calls streamed the way real servers split them.

    Arguments arrive in several fragments keyed by ``index`` so the client's
    assembly logic is what gets tested. ``reasoning`` is thinking streamed first.
    """
    encoded = tuple(
        (name, args if isinstance(args, str) else json.dumps(args)) for name, args in calls
    )
    return Reply(
        kind="tool_calls",
        pieces=pieces(content, 4) if content else (),
        calls=encoded,
        reasoning=pieces(reasoning, 4) if reasoning else (),
        reasoning_field=reasoning_field,
    )


def error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    type: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """An OpenAI-shaped error response.

    429 and 5xx carry ``retry-after-ms: 1`` by default so the SDK's own retry
    loop runs at full speed in tests instead of backing off for seconds.
    """
    err_type = type or _DEFAULT_ERROR_TYPES.get(
        status, "server_error" if status >= 500 else "error"
    )
    hdrs = {"retry-after-ms": "1"} if status == 429 or status >= 500 else {}
    hdrs.update(headers or {})
    body = {"error": {"message": message, "type": err_type, "code": code, "param": None}}
    return Reply(kind="error", status=status, body=body, headers=hdrs)


def overflow(limit: int = 8192, requested: int = 9000) -> Reply:
    """The 400 OpenAI sends when the prompt does not fit the context window."""
    message = (
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {requested} tokens. Please reduce the length of the messages."
    )
    return error(400, message, code="context_length_exceeded", type="invalid_request_error")


def drop(after_chunks: int = 1) -> Reply:
    """A stream that dies mid-reply (no terminating chunk, no ``[DONE]``)."""
    return Reply(kind="drop", pieces=("partial ",) * max(0, after_chunks))


def reset(after_chunks: int = 1) -> Reply:
    """A stream the server aborts mid-reply with a TCP reset (RST), as a crashed proxy does."""
    return Reply(kind="reset", pieces=("partial ",) * max(0, after_chunks))


def cutoff(
    content: str = "",
    *,
    calls: Sequence[tuple[str, str]] = (),
    chunk_chars: int = 4,
    cut: int | None = None,
    framing: Framing = "chunked",
    reasoning: str = "",
    reasoning_field: ReasoningField = "reasoning_content",
) -> Reply:
    """A stream the server ends cleanly mid-reply: no finish reason, no ``[DONE]``.

    Unlike :func:`drop` the HTTP body ends properly, so no transport error tells
    the client: only the missing end of the reply does. The deltas are those of
    a whole reply (the role, then the text in ``chunk_chars`` pieces, then each
    call's header and its arguments in three fragments); ``cut`` sends only the
    first ``cut`` of them. ``calls`` carry raw argument text, so a cut inside the
    JSON is a prefix of it. ``reasoning`` is thinking streamed before the text (its
    deltas count in ``cut``: a cut inside it leaves a reply that only thought).
    """
    return Reply(
        kind="cutoff",
        pieces=pieces(content, chunk_chars) if content else (),
        calls=tuple(calls),
        cut=cut,
        framing=framing,
        reasoning=pieces(reasoning, chunk_chars) if reasoning else (),
        reasoning_field=reasoning_field,
    )


def stall(content: str = "partial answer that stalls", *, chunk_chars: int = 8) -> Reply:
    """A stream that sends its first piece of text and then no byte until released.

    Only the client's read timeout (or a release) ends it, so tests set the timeout small
    and wait on the client's state instead of sleeping.
    """
    return text(content, chunk_chars=chunk_chars, hold=True)


def malformed(after_chunks: int = 1, line: str = '{"choices": [{"delta": ') -> Reply:
    """A stream whose data line after ``after_chunks`` pieces of text is not valid JSON."""
    return Reply(kind="malformed", pieces=("partial ",) * max(0, after_chunks), raw=line)


def empty() -> Reply:
    """A 200 stream with no chunks at all: just ``data: [DONE]``."""
    return Reply(kind="empty")


def choiceless() -> Reply:
    """A stream whose chunks all have an empty ``choices`` list (usage only)."""
    return Reply(kind="choiceless")


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def echo(body: dict[str, Any]) -> Reply:
    """The reply used when the script is empty: it proves which prompt arrived."""
    messages = body.get("messages") or []
    last_user = next(
        (m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"), {}
    )
    return text("echo: " + message_text(last_user))
