"""No full garbage collection while the user scrolls through history; one at the pause.

A full collection walks every object the app keeps (a window of rendered
messages and the caches of their lines), and scrolling back makes many that
live a while: one falls due every second or so of a held PageUp and holds
the UI loop, each key's frame with it. While the user scrolls (and the window
grows after it) full collections are held (tui.live.collection), as they are
while a reply streams; once scrolling has paused for `PAUSE` seconds the hold
ends and, if nothing else holds them, the collection that fell due runs then.
Scrolling on without a pause lets one run every `LONGEST` seconds: what the
held collections would have freed is bounded.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from textual.timer import Timer
from textual.widget import Widget

from tui.live import collection

PAUSE = 1.0
"""Seconds without scrolling (and without the window growing) that end the hold."""
LONGEST = 20.0
"""Seconds of scrolling on without a pause after which the due collection runs anyway."""


class ScrollHold:
    """The hold of one scrolling widget: `touch` on every scroll, `end` when it goes."""

    def __init__(self, widget: Widget, busy: Callable[[], bool]) -> None:
        self._widget = widget
        self._busy = busy
        """Whether the widget still works on the scroll (its window growing)."""
        self._timer: Timer | None = None
        self._since = 0.0
        """When the hold began (`time.monotonic`)."""

    @property
    def holding(self) -> bool:
        return self._timer is not None

    def touch(self) -> None:
        """The user scrolled: hold from now until the next pause."""
        if self._timer is not None and time.monotonic() - self._since > LONGEST:
            self._collect()
        if self._timer is None:
            self._since = time.monotonic()
            collection.hold_full()
            self._timer = self._widget.set_timer(PAUSE, self._paused, name="scroll hold")
        else:
            self._timer.reset()  # counted again once the running wait is over

    def _paused(self) -> None:
        if self._busy() and self._timer is not None:
            self._timer = self._widget.set_timer(PAUSE, self._paused, name="scroll hold")
            return
        self._collect()

    def _collect(self) -> None:
        """End the hold and run the full collection that fell due meanwhile (none while
        something else holds them: a reply streaming)."""
        self.end()
        if not collection.holding():
            gc.collect()

    def end(self) -> None:
        """Let go of the hold (no collection: the widget is going away or stops here)."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.stop()
            collection.release_full()
