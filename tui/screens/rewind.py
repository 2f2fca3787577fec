"""Esc Esc and /rewind: pick an earlier prompt of this thread to go back to (newest first).

The engine rewinds (engine.runtime.rewind); the transcript follows its
`session/rewind` event, and the prompt's text is put back in the input to edit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from engine.runtime import Runtime
from engine.runtime.rewind import RewindPoint, RewindRefused, points, refusal, rewind
from engine.util.safe_text import safe_text
from tui.screens.input_echo import EchoingModalScreen


def _when(point: RewindPoint) -> str:
    """The prompt's local time, as the threads list shows times."""
    try:
        moment = datetime.fromisoformat(point.ts.replace("Z", "+00:00"))
    except ValueError:
        return point.ts[:16]
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def _line(point: RewindPoint) -> Content:
    text = " ".join(safe_text(point.text).split())
    short = text if len(text) <= 70 else text[:69] + "…"
    if point.on_line:
        return Content.assemble("  ", (f"{_when(point)}  ", "$text-muted"), short)
    return Content.assemble(
        ("○ ", "$text-warning"),
        (f"{_when(point)}  ", "$text-muted"),
        short,
        "  ",
        ("(another branch)", "$text-muted"),
    )


class RewindScreen(EchoingModalScreen[RewindPoint | None]):
    CSS_PATH = ["dialog.tcss", "rewind.tcss"]
    BINDINGS = [
        Binding("escape", "dismiss_none", "Close", tooltip="close the list; nothing changes")
    ]

    def __init__(self, points: list[RewindPoint]) -> None:
        super().__init__()
        self.points = points

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(" Rewind — go back to just before a prompt", id="rewind-title")
            yield Label(
                " Enter goes back and puts the prompt in the input to edit; nothing after it "
                "is deleted (it stays a branch, ○). Esc closes.",
                id="rewind-hint",
            )
            yield OptionList(*(Option(_line(point), id=str(point.number)) for point in self.points))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.points[event.option_index])

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


async def pick_and_rewind(screen: Screen[Any], current: Callable[[], Runtime | None]) -> str | None:
    """Open the picker over the `current` thread (the caller's worker waits for the choice),
    then go back there; the chosen prompt's text, or None when nothing was rewound."""
    runtime = current()
    if runtime is None:
        return None
    log, driver = runtime.thread.log, runtime.driver
    why = refusal(driver, log)
    if why is not None:
        screen.notify(why, severity="warning")
        return None
    # Every prompt of the thread: its older events are read in a worker.
    listed = await asyncio.to_thread(points, log, len(log.file_events))
    if not listed:
        screen.notify("Nothing to rewind to yet: this thread has no prompts.")
        return None
    chosen = await screen.app.push_screen_wait(RewindScreen(listed))
    if chosen is None or current() is not runtime:
        return None
    try:
        rewind(driver, log, chosen)
    except RewindRefused as exc:  # something started while the picker was open
        screen.notify(str(exc), severity="warning")
        return None
    return chosen.text
