"""What the engine's commands ask of the chat screen.

The chat screen is the engine's FrontEnd (engine.runtime.commands): a command
that switches threads or quits does so once it has returned. It also carries
out the commands only it can (tui.actions: /help, /threads, /rewind,
/archive) and the screen's side of /copy and /edit; every command goes through
the engine's registry, so /help, slash completion and the palette read one list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any

from textual.screen import Screen

from engine.mcp import Answer, ConsentRequest
from engine.model.backend import Backend
from engine.runtime import Runtime
from engine.runtime.commands import Command
from engine.runtime.rewind import RewindPoint
from tui.actions import app_actions
from tui.clipboard import copy_text_off_loop
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
        models: Callable[[Backend], None] = lambda backend: None,
    ) -> None:
        self._screen = screen
        self._runtime = runtime
        self._switch = switch
        self._models = models
        """Told the model /model switched to, for the threads opened after."""
        self._commands, self._view, self._drafts, self._inspector = parts

    # FrontEnd

    def open_thread(self, thread_id: str | None) -> None:
        self._commands.switch(partial(self._switch, thread_id))

    def quit(self) -> None:
        self._screen.call_later(self._screen.app.action_quit)

    def actions(self) -> Iterable[Command]:
        return app_actions(self)

    def model_changed(self, backend: Backend) -> None:
        """/model switched the model: the header says so now, new threads use it too."""
        runtime = self._runtime()
        if runtime is not None:
            self._view.model_changed(runtime, backend)
        self._models(backend)

    async def confirm(self, question: str) -> bool:
        """A yes/no dialog (/delete); the command waits for the answer."""
        from tui.screens.confirm import ask

        return await ask(self._screen.app, question)

    async def ask_consent(self, request: ConsentRequest) -> Answer:
        """An MCP tool not in `allow`: allow once, for this thread, or deny (a dialog)."""
        from tui.screens.consent import ask_consent

        return await ask_consent(self._screen.app, request)

    # the Shell of tui.actions: the screen's own keys' actions, once the command returned

    def show_help(self) -> None:
        self._screen.call_later(self._screen.run_action, "help")

    def choose_thread(self) -> None:
        self._screen.call_later(self._screen.run_action, "threads")

    async def switch_to(self, ref: str) -> str:
        from engine.runtime.commands_threads import switch_named

        runtime = self._runtime()
        if runtime is None:
            return "no thread is open"
        return await switch_named(runtime, self, ref)

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

    # the hooks of the engine's /copy and /edit (engine.runtime.commands_replies)

    async def copy(self, text: str, what: str) -> str:
        """/copy: by OSC 52 and the system clipboard, as Ctrl+Y copies."""
        return await copy_text_off_loop(self._screen.app, text, what)

    def edit_prompt(self, point: RewindPoint) -> str:
        """/edit: the last prompt into the input; sending it replaces the last exchange."""
        self._drafts.begin_resend(self._runtime(), point.turn, point.text)
        return (
            "Your last prompt is in the input: Enter sends it in its place (the exchange it "
            "began stays in the log as a branch); Ctrl+C drops the edit."
        )
