"""The surface: the model-facing history, derived from the log by replay.

A pure function of the events (no I/O), kept incrementally so a long thread
is replayed once. Compaction is positional: the checkpoint takes the place
of the span it replaces, so context appended while the summary was being
written (an injection) stays after the checkpoint even though its seq is
lower than the checkpoint's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.events import (
    AssistantMessage,
    Checkpoint,
    CompactSummary,
    EndSeed,
    LogEvent,
    ToolResult,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.log import paused_gc

Message = dict[str, Any]

INTERRUPTED_RESULT = "error: no result was recorded for this call (the turn was interrupted)"


def estimate_tokens(text: str) -> int:
    """A cheap, stable estimate (about four characters a token).

    Compaction compares and prices spans with it, so it must depend only on
    the text, never on a tokenizer that could change between runs.
    """
    return tokens_for_chars(len(text))


def tokens_for_chars(chars: int) -> int:
    return (chars + 3) // 4 + 4


@dataclass(slots=True)
class Entry:
    """One message on the surface, with the log seq it came from.

    Treated as immutable; not frozen only because frozen dataclasses are
    several times slower to build, and replay builds one per message.
    """

    seq: int
    role: str
    message: Message
    tokens: int
    checkpoint: bool = False
    turn: int | None = None
    call_ids: tuple[str, ...] = ()
    result_of: str | None = None


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


class Surface:
    """Entries in model order, updated one event at a time."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self._replacements: dict[int, list[int]] = {}
        self._turn: int | None = None
        self.version = 0
        """Bumped by every change to the entries: whole-surface stability is one compare."""

    def _add(self, entry: Entry) -> None:
        self.entries.append(entry)
        self.version += 1

    @classmethod
    def from_events(cls, events: Iterable[LogEvent]) -> Surface:
        surface = cls()
        with paused_gc():
            for event in events:
                surface.apply(event)
        return surface

    def apply(self, event: LogEvent) -> None:
        if isinstance(event, UserMessage):
            text = event.text
            checkpoint = event.checkpoint
            entry = Entry(
                seq=event.seq,
                role="user",
                message={"role": "user", "content": text},
                tokens=estimate_tokens(text),
                checkpoint=checkpoint is not None,
                turn=self._turn,
            )
            if checkpoint is not None:
                self._place_checkpoint(entry, checkpoint)
                self.version += 1
            else:
                self._add(entry)
        elif isinstance(event, AssistantMessage):
            message = _assistant_message(event)
            size = len(message["content"]) + sum(
                len(c["function"]["name"]) + len(c["function"]["arguments"])
                for c in message.get("tool_calls", ())
            )
            calls = tuple(call.id for call in event.calls)
            self._add(
                Entry(
                    event.seq,
                    "assistant",
                    message,
                    tokens_for_chars(size),
                    turn=self._turn,
                    call_ids=calls,
                )
            )
        elif isinstance(event, ToolResult):
            content = event.content
            message = {"role": "tool", "tool_call_id": event.call_id, "content": content}
            self._add(
                Entry(
                    event.seq,
                    "tool",
                    message,
                    estimate_tokens(content),
                    turn=self._turn,
                    result_of=event.call_id,
                )
            )
        elif isinstance(event, TurnStart):
            self._turn = event.turn
        elif isinstance(event, TurnEnd | EndSeed):
            self._turn = None
        elif isinstance(event, CompactSummary):
            self._replacements[event.seq] = list(event.replaced or ())

    def _place_checkpoint(self, entry: Entry, checkpoint: Checkpoint) -> None:
        replaced = set(self._replacements.pop(checkpoint.summary or 0, ()))
        position = None
        kept: list[Entry] = []
        for current in self.entries:
            if current.seq in replaced:
                if position is None:
                    position = len(kept)
                continue
            kept.append(current)
        if position is None:
            position = len(kept)
        kept.insert(position, entry)
        self.entries = kept

    @property
    def tokens(self) -> int:
        return sum(entry.tokens for entry in self.entries)

    def messages(self) -> list[Message]:
        """The chat messages to send, every tool call followed by its result.

        Results are placed right after their call even when other context
        (an injection) landed between them in the log; a call whose result
        never reached the log (a crash or cancel) gets a synthetic error
        result so the request stays valid. Orphan results are dropped.
        """
        results = {e.result_of: e.message for e in self.entries if e.role == "tool"}
        out: list[Message] = []
        for entry in self.entries:
            if entry.role == "tool":
                continue
            out.append(entry.message)
            for call_id in entry.call_ids:
                out.append(
                    results.get(call_id)
                    or {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_RESULT}
                )
        return out
