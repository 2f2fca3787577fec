"""Before an MCP tool the config does not `allow` runs: allow once, for this thread, or deny.

The dialog names the tool and its server and shows the arguments (escaped by
the engine, engine.mcp.ConsentRequest). O allows once, T for the rest of the
thread, D or Esc denies (the model is told). The focus starts on "Deny", so an
Enter typed ahead of the dialog runs nothing. A turn cancelled meanwhile closes it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Label, Static

from engine.mcp import Answer, ConsentRequest
from engine.util.safe_text import safe_text
from tui.screens.input_echo import EchoingModalScreen

ARGUMENT_CHARS = 4000
"""Characters of the arguments the dialog shows; a longer text says how long it was."""


class ConsentScreen(EchoingModalScreen[str]):
    CSS_PATH = "consent.tcss"
    BINDINGS = [
        Binding("o", "answer('once')", "Allow once", tooltip="allow this call once"),
        Binding(
            "t",
            "answer('thread')",
            "Allow for this thread",
            tooltip="allow this tool for the rest of the thread",
        ),
        Binding("d", "answer('deny')", "Deny", tooltip="deny this call"),
        Binding("escape", "answer('deny')", "Deny", tooltip="deny this call"),
    ]

    def __init__(self, request: ConsentRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        args = request.arguments
        if len(args) > ARGUMENT_CHARS:
            args = args[:ARGUMENT_CHARS] + f"… ({len(request.arguments):,} characters)"
        with Vertical():
            yield Label(
                f"Run {safe_text(request.tool)} from MCP server {safe_text(request.server)}?",
                id="consent-question",
            )
            with VerticalScroll(id="consent-arguments"):
                yield Static(safe_text(args), markup=False, id="consent-args")
            with Horizontal(id="consent-buttons"):
                yield Button("Allow once (o)", variant="warning", id="once")
                yield Button("Allow for this thread (t)", variant="warning", id="thread")
                yield Button("Deny (d)", variant="primary", id="deny")

    def on_mount(self) -> None:
        self.query_one("#deny", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id or "deny")

    def action_answer(self, answer: str) -> None:
        self.dismiss(answer)


async def ask_consent(app: App[Any], request: ConsentRequest) -> Answer:
    """Show the dialog and wait; a cancelled wait (the turn's) closes it (deny)."""
    answered: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()

    def done(answer: str | None) -> None:
        if not answered.done():
            answered.set_result(
                "once" if answer == "once" else "thread" if answer == "thread" else "deny"
            )

    screen = ConsentScreen(request)
    app.push_screen(screen, callback=done)
    try:
        return await answered
    except asyncio.CancelledError:
        if screen.is_attached and app.screen is screen:
            screen.dismiss("deny")
        raise
