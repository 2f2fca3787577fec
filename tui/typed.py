"""What the user types: when the last key came, and characters typed where nothing takes text.

A streaming reply draws less often while keys arrive, so it reads when the
last one came from the app (`TypingApp.typed_at`), and draws a frame it held
back right after a key's echo (`after_echo`), when the next key is furthest off.

A printable key pressed on the transcript, the queue or an inspector list
would otherwise be dropped (those widgets ignore letters), and what the user
typed would vanish. The chat screen sends such a key to the prompt, the
inspector to its search box. Keys a focused widget binds (E on the queue, n/p/c
in the reader) keep their meaning.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from textual import events
from textual.app import App
from textual.screen import Screen

ReturnType = TypeVar("ReturnType")


class TypingApp(App[ReturnType]):
    """An app that notes when each key arrives, before anything handles it."""

    typed_at = 0.0
    """When the last key arrived (monotonic)."""
    echoed_at = 0.0
    """When a frame echoing input was last drawn at once (`echoed`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._after_echo: list[Callable[[], object]] = []

    def after_echo(self, callback: Callable[[], object]) -> None:
        """Call `callback` once, when the frame echoing the next input has been drawn (a
        screen that draws echoes at once says so, `echoed`)."""
        if callback not in self._after_echo:
            self._after_echo.append(callback)

    def echoed(self) -> None:
        """The frame echoing input was just drawn: the loop is free until the next key."""
        self.echoed_at = time.monotonic()
        waiting, self._after_echo = self._after_echo, []
        for callback in waiting:
            callback()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.typed_at = time.monotonic()
        await super().on_event(event)


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
