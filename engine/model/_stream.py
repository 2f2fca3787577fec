"""Folding a streamed chat completion into one result, chunk by chunk."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
class StreamReader:
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
                merge_call(self.calls, tc)
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


def merge_call(calls: dict[int, _PartialCall], tc: Any) -> None:
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
