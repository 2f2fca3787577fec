"""A yes/no question before something that cannot be undone (/delete).

Y or Enter on "Yes" answers yes; N, Esc or "No" answers no. The focus starts on
"No", so an Enter typed ahead of the dialog deletes nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label

from engine.util.safe_text import safe_text
from tui.screens.input_echo import EchoingModalScreen


class ConfirmScreen(EchoingModalScreen[bool]):
    CSS_PATH = "confirm.tcss"
    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(safe_text(self.question), id="confirm-question")
            with Horizontal(id="confirm-buttons"):
                yield Button("Yes (y)", variant="error", id="yes")
                yield Button("No (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


async def ask(app: App[Any], question: str) -> bool:
    """Show the question and wait for the answer; a cancelled wait closes the dialog (no)."""
    answered: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def done(yes: bool | None) -> None:
        if not answered.done():
            answered.set_result(bool(yes))

    screen = ConfirmScreen(question)
    app.push_screen(screen, callback=done)
    try:
        return await answered
    except asyncio.CancelledError:
        if screen.is_attached and app.screen is screen:
            screen.dismiss(False)
        raise
