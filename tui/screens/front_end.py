"""What the engine's commands ask of the chat screen.

The chat screen is the engine's FrontEnd (engine.runtime.commands): a command
that switches threads or quits does so once it has returned. It also carries
out the commands only it can (tui.actions: /help, /threads, /rewind,
/archive, /copy), which go through the engine's registry with every other
command, so /help, slash completion and the palette read one list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any

from textual.screen import Screen

from engine.runtime import Runtime
from engine.runtime.commands import Command
from tui.actions import app_actions
from tui.clipboard import copy_text
from tui.screens.command_runner import CommandRunner
from tui.screens.inspector_pane import InspectorPane
from tui.screens.prompt_drafts import PromptDrafts
from tui.screens.thread_view import ThreadView


class ChatFrontEnd:
    def __init__(
        self,
        screen: Screen[Any],
        runtime: Callable[[], Runtime | None],
        switch: Callable[[str | None], Awaitable[None]],
        parts: tuple[CommandRunner, ThreadView, PromptDrafts, InspectorPane],
    ) -> None:
        self._screen = screen
        self._runtime = runtime
        self._switch = switch
        self._commands, self._view, self._drafts, self._inspector = parts

    # FrontEnd

    def open_thread(self, thread_id: str | None) -> None:
        self._commands.switch(partial(self._switch, thread_id))

    def quit(self) -> None:
        self._screen.call_later(self._screen.app.action_quit)

    def actions(self) -> Iterable[Command]:
        return app_actions(self)

    # the Shell of tui.actions: the screen's own keys' actions, once the command returned

    def show_help(self) -> None:
        self._screen.call_later(self._screen.run_action, "help")

    def choose_thread(self) -> None:
        self._screen.call_later(self._screen.run_action, "threads")

    def choose_rewind(self) -> None:
        self._screen.call_later(self._screen.run_action, "rewind")

    async def rewind_to(self, args: str) -> None:
        import asyncio

        from engine.runtime.builtin import rewind_numbered
        from engine.runtime.rewind import points

        runtime = self._runtime()
        if runtime is not None:
            log = runtime.thread.log
            # Every prompt of the thread: its older events are read in a worker.
            listed = await asyncio.to_thread(points, log, len(log.file_events))
            self._drafts.prefill(rewind_numbered(runtime, args, listed).text)

    async def toggle_inspector(self) -> None:
        await self._inspector.show(not self._inspector.shown, self._runtime())

    def last_reply(self) -> str | None:
        return self._view.last_reply()

    def copy(self, text: str) -> str:
        return copy_text(self._screen.app, text)
