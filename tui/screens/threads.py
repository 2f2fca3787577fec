"""/threads and Ctrl+T: pick a thread to switch to (the newest message first), numbered as
`/threads N` and `--thread N` count them; `-p` marks a thread `trove -p` began."""

from __future__ import annotations

import asyncio
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from engine.runtime import Runtime
from engine.util.safe_text import safe_text
from engine.workspace.listing import ThreadInfo, list_threads
from tui.screens.input_echo import EchoingModalScreen


class ThreadsScreen(EchoingModalScreen[str | None]):
    CSS_PATH = ["dialog.tcss", "threads.tcss"]
    BINDINGS = [Binding("escape", "dismiss_none", "Close", tooltip="close the list")]

    def __init__(self, threads: list[ThreadInfo], current: str) -> None:
        super().__init__()
        self.threads = threads
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(" Threads — Enter opens, Esc closes")
            options = []
            for number, info in enumerate(self.threads, 1):
                stamp = info.changed.astimezone().strftime("%Y-%m-%d %H:%M")
                mark = "● " if info.id == self.current else "  "
                one_shot = ("  -p", "$text-muted") if info.one_shot else ""
                options.append(
                    Option(
                        Content.assemble(
                            (f"{number:>3} ", "$text-muted"),
                            mark,
                            (info.id, "bold"),
                            f"  {stamp}  ",
                            (safe_text(info.title), "$text-muted"),
                            one_shot,
                        ),
                        id=info.id,
                    )
                )
            yield OptionList(*options)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


async def choose_thread(app: App[Any], runtime: Runtime) -> str | None:
    """The picker over the user's threads, `runtime`'s marked (the caller's worker waits
    for the choice); the thread chosen, or None."""
    thread = runtime.thread
    threads = await asyncio.to_thread(list_threads, thread.home, thread.user_id)
    return await app.push_screen_wait(ThreadsScreen(threads, thread.id))
