"""One message on the surface (`Entry`), and how an event becomes one.

The builders inline the token estimate and pass every field at once: replay builds
one entry per message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from engine.events import AssistantMessage, ToolResult, UserMessage
from engine.util.tool_cut import context_chars

Message = dict[str, Any]


def estimate_tokens(text: str) -> int:
    """A cheap, stable estimate (about four characters a token).

    Compaction compares and prices spans with it, so it must depend only on
    the text, never on a tokenizer that could change between runs.
    """
    return tokens_for_chars(len(text))


def tokens_for_chars(chars: int) -> int:
    return (chars + 3) // 4 + 4


class Entry(msgspec.Struct, gc=False, eq=False):
    """One message on the surface: its log seq, role and price, and the event it came from.

    The chat message is built only when a request (or the archive) asks for it,
    then cached: replay would otherwise build a dict per past message. Immutable
    but for that cache. A Struct, cheaper to build than a dataclass, and kept out of
    the cycle collector (it holds events and strings only).
    """

    seq: int
    role: str
    event: UserMessage | AssistantMessage | ToolResult
    tokens: int
    checkpoint: bool = False
    turn: int | None = None
    call_ids: tuple[str, ...] = ()
    result_of: str | None = None
    _message: Message | None = None

    def __eq__(self, other: object) -> bool:
        """Equal entries stand for the same message; the cache does not count."""
        if not isinstance(other, Entry):
            return NotImplemented
        return (
            self.seq == other.seq
            and self.role == other.role
            and self.event == other.event
            and self.tokens == other.tokens
            and self.checkpoint == other.checkpoint
            and self.turn == other.turn
            and self.call_ids == other.call_ids
            and self.result_of == other.result_of
        )

    @property
    def message(self) -> Message:
        """The chat message for a request, built on first use."""
        message = self._message
        if message is None:
            message = self._message = _message_of(self.event)
        return message


def _message_of(event: UserMessage | AssistantMessage | ToolResult) -> Message:
    if isinstance(event, UserMessage):
        return {"role": "user", "content": event.text}
    if isinstance(event, ToolResult):
        return {"role": "tool", "tool_call_id": event.call_id, "content": event.content}
    return _assistant_message(event)


def _assistant_message(event: AssistantMessage) -> Message:
    message: Message = {"role": "assistant", "content": event.content or ""}
    if event.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments or "{}"},
            }
            for call in event.tool_calls
        ]
    return message


def user_entry(event: UserMessage, turn: int | None) -> Entry:
    return Entry(
        event.seq,
        "user",
        event,
        (len(event.text) + 3) // 4 + 4,
        event.checkpoint is not None,
        turn,
    )


def assistant_entry(event: AssistantMessage, turn: int | None) -> Entry | None:
    """None for a reply with neither text nor calls (one cut off while it was still
    thinking): there is nothing in it to send, and its thinking is never sent."""
    size = len(event.content or "")
    calls = event.tool_calls
    if not calls:
        if not size:
            return None
        return Entry(event.seq, "assistant", event, (size + 3) // 4 + 4, False, turn)
    size += sum([len(c.name) + len(c.arguments or "{}") for c in calls])
    ids = tuple([call.id for call in calls])
    return Entry(event.seq, "assistant", event, (size + 3) // 4 + 4, False, turn, ids)


def tool_entry(event: ToolResult, turn: int | None) -> Entry:
    tokens = (context_chars(event.content) + 3) // 4 + 4
    return Entry(event.seq, "tool", event, tokens, False, turn, (), event.call_id)


ENTRY_BUILDERS: dict[type, Callable[[Any, int | None], Entry | None]] = {
    UserMessage: user_entry,
    AssistantMessage: assistant_entry,
    ToolResult: tool_entry,
}
"""The entry of a plain message (a user message without a checkpoint), as `apply` adds it."""
