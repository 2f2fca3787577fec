"""A screen that draws the echo of a key at once, not at the update timer's next tick.

Textual draws a screen from a timer (at most `TEXTUAL_FPS` ticks a second; a tick the
loop was busy for is skipped to the one after): a change asks for the next tick, so a
key pressed just after a frame waits for that tick, on top of the frame itself
(`bench/scroll.py` and `bench/tmux_stream.py` measure it). Here, once the screen goes
idle after input and something is waiting to be drawn, it draws that frame itself, as
the timer would have. While more input is queued (a burst of keys) the timer draws, as
before, so a burst is not a frame a key. The chat screen and every dialog over it do.
"""

from __future__ import annotations

from textual import events
from textual.screen import ModalScreen, Screen, ScreenResultType

ECHOED = (events.Key, events.Paste, events.MouseScrollDown, events.MouseScrollUp)
"""Input whose effect is drawn at once (a mouse move is not: it comes in floods)."""


class EchoingScreen(Screen[ScreenResultType]):
    """A screen that draws the frame a key (or a paste, a wheel turn) asks for at once."""

    _echo_due = False
    """Input arrived and no frame has been drawn for it yet."""

    def input_arrived(self) -> None:
        """Said by the app for each input event of `ECHOED`, as it arrives."""
        self._echo_due = True

    async def _on_idle(self, event: events.Idle) -> None:
        # Before Screen's own handler (which would resume the update timer): a frame
        # drawn here leaves it nothing to ask for.
        if not self._echo_due or not self._waiting_to_draw():
            return
        app = self.app
        if not self.is_current or app._batch_count or not app._message_queue.empty():
            return
        self._echo_due = False
        self._on_timer_update()

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
