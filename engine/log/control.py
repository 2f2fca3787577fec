"""The control events of a log: the few that are not plain conversation.

Resume derives the open brackets (`TailState`), the prompts still queued and the
archive references from the whole log. One pass at load does the brackets and keeps
the control events aside, in order, so the others read a short list instead of
walking every event again.

A control event is every event except assistant replies, tool results, turn markers,
and user messages that neither came from the inbox (`item_id`) nor stand for a
checkpoint. Whoever reads `SessionLog.control` must need nothing from those.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.events import AssistantMessage, LogEvent, ToolResult, TurnEnd, TurnStart, UserMessage
from engine.log.brackets import BRACKETS, TailState

_PLAIN = frozenset({AssistantMessage, ToolResult})


def is_control(event: LogEvent) -> bool:
    kind = type(event)
    if kind in _PLAIN or kind is TurnStart or kind is TurnEnd:
        return False
    if kind is UserMessage:
        message: UserMessage = event  # type: ignore[assignment]
        return message.item_id is not None or message.checkpoint is not None
    return True


def replay(events: Iterable[LogEvent], tail: TailState) -> list[LogEvent]:
    """Apply every bracket to `tail` and return the control events, in one pass.

    Turn markers are half of a plain thread's events: what `TailState.apply`
    does with them is done here on locals, and `tail` gets them back before
    any other bracket (which may read or clear the open turn) is applied.
    """
    control: list[LogEvent] = []
    keep = control.append
    apply = tail.apply
    plain = _PLAIN
    brackets = BRACKETS
    open_turn, last_turn = tail.open_turn, tail.last_turn
    for event in events:
        kind = type(event)
        if kind in plain:
            continue
        if kind is UserMessage:
            if event.item_id is not None or event.checkpoint is not None:  # type: ignore[union-attr]
                keep(event)
        elif kind is TurnStart:
            open_turn = event  # type: ignore[assignment]
            if open_turn.turn > last_turn:  # type: ignore[union-attr]
                last_turn = open_turn.turn  # type: ignore[union-attr]
        elif kind is TurnEnd:
            if open_turn is not None and open_turn.turn == event.turn:  # type: ignore[union-attr]
                open_turn = None
        else:
            if kind in brackets:
                tail.open_turn, tail.last_turn = open_turn, last_turn
                apply(event)
                open_turn, last_turn = tail.open_turn, tail.last_turn
            keep(event)
    tail.open_turn, tail.last_turn = open_turn, last_turn
    return control
