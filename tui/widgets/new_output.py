"""The "↓ new messages" line under a transcript the user scrolled away from the end of.

The transcript never pulls the view down while someone reads back; this line
says that output arrived meanwhile. Clicking it (or Ctrl+End; End in the transcript)
jumps to the end and follows again.
"""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widgets import Static

LABEL = "↓ new messages — click or press Ctrl+End to jump to them"


class NewOutputMarker(Static):
    DEFAULT_CSS = """
    NewOutputMarker {
        display: none;
        height: 1;
        width: 100%;
        padding: 0 1;
        background: $accent 30%;
        color: $text;
        text-style: bold;
    }
    """

    class Jump(Message):
        """The user asked for the end of the transcript."""

    def __init__(self, id: str | None = None) -> None:
        super().__init__(LABEL, id=id)

    def show(self, shown: bool) -> None:
        if self.display != shown:
            self.display = shown

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(self.Jump())
