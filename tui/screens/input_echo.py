"""A screen that draws the echo of a key at once, not at the update timer's next tick.

Textual draws a screen from a timer (at most `TEXTUAL_FPS` ticks a second; a tick the
loop was busy for is skipped to the one after): a change asks for the next tick, so a
key pressed just after a frame waits for that tick, on top of the frame itself
(`bench/scroll.py` and `bench/tmux_stream.py` measure it). Here, once the screen goes
idle after input and something is waiting to be drawn, it draws that frame itself, as
the timer would have, and so for what waits at the next idle moments within `FOLLOW_UP`
of the input (a frame's own drawing may ask for a repaint: the transcript's scroll bar
does). While more input is queued (a burst of keys) the timer draws, as before, so a
burst is not a frame a key. The chat screen and every dialog over it do.
"""

from __future__ import annotations

import time

from textual import events
from textual.screen import ModalScreen, Screen, ScreenResultType

from tui.typed import TypingApp

ECHOED = (events.Key, events.Paste, events.MouseScrollDown, events.MouseScrollUp)
"""Input whose effect is drawn at once (a mouse move is not: it comes in floods)."""
FOLLOW_UP = 0.25
"""Seconds after input during which what waits to be drawn at an idle moment is drawn at
once too, not at the update timer's next tick."""


class EchoingScreen(Screen[ScreenResultType]):
    """A screen that draws the frame a key (or a paste, a wheel turn) asks for at once."""

    _echo_due = False
    """Input arrived and no frame has been drawn for it yet."""
    _input_at = 0.0
    """When the last input of `ECHOED` arrived (monotonic)."""

    def input_arrived(self) -> None:
        """Said by the app for each input event of `ECHOED`, as it arrives."""
        self._echo_due = True
        self._input_at = time.monotonic()

    async def _on_idle(self, event: events.Idle) -> None:
        # Before Screen's own handler (which would resume the update timer): a frame
        # drawn here leaves it nothing to ask for.
        echo = self._echo_due
        if not echo and time.monotonic() - self._input_at >= FOLLOW_UP:
            return
        if not self._waiting_to_draw():
            return
        app = self.app
        if not self.is_current or app._batch_count:
            return
        if not app._message_queue.empty():
            # The app has messages to handle first (the rest of a burst among them): this
            # screen looks again once they are handled, rather than at the timer's tick.
            app.call_later(self.check_idle)
            return
        self._echo_due = False
        self._on_timer_update()
        if echo and isinstance(app, TypingApp):
            app.echoed()  # a reply's frame held back for keys may draw now

    def _waiting_to_draw(self) -> bool:
        return bool(
            self._layout_required
            or self._scroll_required
            or self._repaint_required
            or self._dirty_widgets
        )


class EchoingModalScreen(ModalScreen[ScreenResultType], EchoingScreen[ScreenResultType]):
    """A dialog over the chat screen (threads, rewind, help, a question) that draws the
    frame a key asks for at once, as the chat screen does.

    ModalScreen comes first: Textual reads default CSS and CSS type names along the
    first base only, and a dialog's (a see-through background) is ModalScreen's."""
