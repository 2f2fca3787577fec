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


def stray_character(screen: Screen[Any], event: events.Key) -> str | None:
    """The character of `event`, which reached a handler above the widget it was sent to,
    when no binding wants the key.

    A text box consumes every printable key it is sent, so one that bubbles this far was
    sent to a widget that takes no text, even when the focus has moved to a text box
    since: the rest of a burst typed on the transcript arrives after the first key moved
    the focus, and must not be dropped for it.
    """
    if not event.is_printable or event.character is None:
        return None
    if event.key in screen.active_bindings:
        return None
    return event.character
