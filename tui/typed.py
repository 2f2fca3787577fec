"""Characters typed where nothing takes text: they belong to a text box, never to nobody.

A printable key pressed on the transcript, the queue or an inspector list
would otherwise be dropped (those widgets ignore letters), and what the user
typed would vanish. The chat screen sends such a key to the prompt, the
inspector to its search box. Keys a focused widget binds (E on the queue, n/p/c
in the reader) keep their meaning.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.screen import Screen
from textual.widgets import Input, TextArea


def stray_character(screen: Screen[Any], event: events.Key) -> str | None:
    """The character of `event` when no text box has focus and no binding wants the key."""
    if not event.is_printable or event.character is None:
        return None
    if isinstance(screen.focused, Input | TextArea):
        return None
    if event.key in screen.active_bindings:
        return None
    return event.character
