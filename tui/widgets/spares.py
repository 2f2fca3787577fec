"""Widgets the transcript's window let go of, kept hidden to show other messages.

While the user scrolls a long thread, the window over its log moves: a slice
of messages is mounted at one end, and as many widgets are pruned at the
other. A pruned widget is in reference cycles with the app (its styles, its
bindings, its message queue…), so only a full garbage collection frees it:
freeing a batch of them was most of such a collection's time while PageUp is
held, and every slice mounted paid for its widgets' making and styling. So
while the window grows, the user messages, past replies and tool calls it
lets go of are hidden and kept here, and the next slices take them for their
own messages: moved to the other end and rebound (`rebind`) to what a new
widget would have shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from textual.widget import Widget

from tui.widgets.chat_message import PastReply, UserMessage
from tui.widgets.tool_block import ToolBlock

KINDS = (UserMessage, PastReply, ToolBlock)
"""What is kept: exactly these types (a reply still streaming is not a past reply)."""

W = TypeVar("W", bound=Widget)


class Spares:
    """At most `most` hidden widgets, by kind, children of the transcript that keeps them."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._kept: dict[type[Widget], list[Widget]] = {kind: [] for kind in KINDS}
        self._all: set[Widget] = set()
        """Every widget kept, for `in` (the transcript asks for each child it lists)."""

    def __len__(self) -> int:
        return len(self._all)

    def __contains__(self, widget: object) -> bool:
        return widget in self._all

    def keep(self, widgets: Sequence[Widget]) -> list[Widget]:
        """Hide and keep what may show another message, up to `most`; the rest (to be
        removed) is returned, in order. One with the focus is not kept: removed, Textual
        moves the focus on, where hidden it would keep it."""
        rest: list[Widget] = []
        room = self.most - len(self)
        for widget in widgets:
            kept = self._kept.get(type(widget))
            if kept is None or room <= 0 or widget.has_focus:
                rest.append(widget)
                continue
            room -= 1
            widget.display = False
            kept.append(widget)
            self._all.add(widget)
        return rest

    def take(self, kind: type[W], parent: Widget) -> W | None:
        """A kept widget of `kind` still a child of `parent`, shown again and without the
        classes of the message it showed (None: none kept)."""
        kept = self._kept.get(kind, [])
        while kept:
            widget = kept.pop()
            self._all.discard(widget)
            if widget.parent is parent and widget.is_attached:
                if widget.classes:
                    widget.set_classes(())
                widget.display = True
                return widget  # type: ignore[return-value]
        return None

    def clear(self) -> None:
        """The transcript's children went (a jump to an end, another thread)."""
        for kept in self._kept.values():
            kept.clear()
        self._all.clear()
