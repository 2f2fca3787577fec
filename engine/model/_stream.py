"""Folding a streamed chat completion into one result, chunk by chunk."""

from __future__ import annotations

from typing import Any

from msgspec import Struct, field

from engine.model.think_tags import InlineThinking


class ToolCall(Struct, frozen=True):
    """One tool call as the model sent it; ``arguments`` is the raw JSON text.

    Arguments stay unparsed so the tool layer can report malformed JSON from the
    model as a tool error instead of the client failing the whole turn.
    """

    id: str
    name: str
    arguments: str


class Completion(Struct, frozen=True):
    """The assembled result of one streamed request."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    finish_reason: str | None = None
    model: str = ""
    reasoning: str = ""
    """What a reasoning model thought before it answered ("" for other models)."""


REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Where a delta carries a reasoning model's thinking: DeepSeek's API and older vLLM use
`reasoning_content`; Ollama, newer vLLM, llama.cpp's server and OpenRouter `reasoning`.
A server sending both at once sends the same text twice: the first one set is read."""


class _PartialCall(Struct):
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamReader(Struct):
    """Folds streamed chunks into one completion, refusing shapes it cannot trust.

    A value of the wrong type raises ``TypeError`` here, which the client reports
    as a malformed stream, instead of surfacing later as a confusing failure.
    """

    served_model: str
    text: list[str] = field(default_factory=list)
    thought: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    usage: dict[str, Any] | None = None
    finish: str | None = None
    saw_choice: bool = False
    inline: InlineThinking = field(default_factory=InlineThinking)
    """Thinking written inline at the start of the content (engine.model.think_tags)."""

    def feed(self, chunk: Any) -> tuple[str, str]:
        """Take one chunk as decoded JSON; returns its thinking and its text, for the caller
        to show."""
        if not isinstance(chunk, dict):
            raise TypeError("a chunk is not an object")
        model = chunk.get("model")
        if model:
            self.served_model = _str_or_none(model) or self.served_model
        usage = chunk.get("usage")
        if usage is not None:
            self.usage = _without_nones(_dict(usage))
        choices = chunk.get("choices")
        if choices is None:
            choices = []
        if not isinstance(choices, list):
            raise TypeError("choices is not a list")
        pieces: list[str] = []
        thoughts: list[str] = []
        for choice in choices:
            choice = _dict(choice)
            self.saw_choice = True
            finish = choice.get("finish_reason")
            if finish:
                self.finish = _str_or_none(finish)
            delta = choice.get("delta")
            if delta is None:
                continue
            delta = _dict(delta)
            thought = _thought(delta)
            if thought:
                thoughts.append(thought)
            content = _str_or_none(delta.get("content"))
            if content:
                pieces.append(content)
            for tc in delta.get("tool_calls") or ():
                merge_call(self.calls, _dict(tc))
        piece = "".join(pieces)
        if piece:
            inline, piece = self.inline.feed(piece)
            if inline:
                thoughts.append(inline)
        if piece:
            self.text.append(piece)
        thought = "".join(thoughts)
        if thought:
            self.thought.append(thought)
        return thought, piece

    def end(self) -> tuple[str, str]:
        """The stream is over: the thinking and text the inline split still held back
        (a tag's beginning, blanks), for the caller to show."""
        thought, piece = self.inline.end()
        if thought:
            self.thought.append(thought)
        if piece:
            self.text.append(piece)
        return thought, piece

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
            reasoning="".join(self.thought),
        )


def _thought(delta: dict[str, Any]) -> str | None:
    """The thinking a delta carries, under either name (see `REASONING_FIELDS`)."""
    for name in REASONING_FIELDS:
        value = _str_or_none(delta.get(name))
        if value:
            return value
    return None


def _dict(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise TypeError(f"expected an object, got {type(value).__name__}")


def _without_nones(value: dict[str, Any]) -> dict[str, Any]:
    """Usage as the SDK's ``model_dump(exclude_none=True)`` gave it: absent, not null."""
    kept = {k: v for k, v in value.items() if v is not None}
    return {k: _without_nones(v) if isinstance(v, dict) else v for k, v in kept.items()}


def _str_or_none(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"expected text, got {type(value).__name__}")


def merge_call(calls: dict[int, _PartialCall], tc: dict[str, Any]) -> None:
    """Fold one streamed tool-call fragment into the call it belongs to (by ``index``).

    Some servers omit ``index``; a fragment with a new id then starts a call and
    one without continues the latest, which is how those servers stream.
    """
    index = tc.get("index")
    if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
        raise TypeError("tool call index is not an integer")
    if index is None:
        by_id = {c.id: i for i, c in calls.items() if c.id}
        last = max(calls, default=-1)
        call_id = tc.get("id")
        index = by_id.get(call_id, last + 1) if call_id else max(last, 0)
    part = calls.setdefault(index, _PartialCall())
    call_id = _str_or_none(tc.get("id"))
    if call_id:
        part.id = call_id
    fn = tc.get("function")
    if fn is None:
        return
    fn = _dict(fn)
    name, arguments = _str_or_none(fn.get("name")), _str_or_none(fn.get("arguments"))
    if name and name != part.name:
        # Names normally arrive whole in the first fragment; a few servers repeat them.
        part.name = name if not part.name else part.name + name
    if arguments:
        part.arguments.append(arguments)
