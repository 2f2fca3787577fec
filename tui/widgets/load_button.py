"""The "load more" row at either end of the transcript.

A resumed thread shows it on its first frame, so it is one Static, not a
Button: Button's stylesheet (every variant of it) was a tenth of the
resume's work on that frame, and its rules made the row three lines tall.
It is the one bold centred line on the surface colour it was meant to be,
taken by a click or by Enter or Space once focused, as the Button was.
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static


class LoadButton(Static, can_focus=True):
    """Loads more of the log into the window (earlier at the top, newer at the bottom)."""

    DEFAULT_CSS = """
    LoadButton {
        width: 100%;
        height: 1;
        content-align: center middle;
        text-style: bold;
        color: $button-foreground;
        background: $surface;
        pointer: pointer;
    }
    LoadButton:hover { background: $surface-darken-1; }
    LoadButton:focus { text-style: $button-focus-text-style; background-tint: $foreground 5%; }
    """
    BINDINGS = [
        Binding(
            "enter,space",
            "press",
            "Load",
            show=False,
            tooltip='on "earlier/newer events": load them',
        )
    ]

    class Pressed(Message):
        def __init__(self, button: LoadButton) -> None:
            super().__init__()
            self.button = button

    def __init__(self, label: str, *, id: str | None = None) -> None:
        super().__init__(label, id=id, markup=False)

    @property
    def label(self) -> str:
        return str(self.content)

    @label.setter
    def label(self, label: str) -> None:
        self.update(label, layout=False)  # one row, the window's width, whatever it says

    def press(self) -> None:
        self.post_message(self.Pressed(self))

    def action_press(self) -> None:
        self.press()

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.press()
