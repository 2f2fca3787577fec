"""Slash commands from the prompt and the palette: each runs in a worker, its result a notice.

Every command goes through the engine's registry of the open thread. Esc or
Ctrl+C cancels the newest one still running (a /compact), else the running
turn. A command that
switches threads (/new, /fork) has its result shown once the switch is over,
in the thread the user then looks at, not in the one just cleared.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from textual.screen import Screen
from textual.worker import Worker

from engine.runtime import Runtime


class CommandRunner:
    def __init__(
        self,
        screen: Screen[Any],
        runtime: Callable[[], Runtime | None],
        notice: Callable[[str, str], None],
        changed: Callable[[], None],
    ) -> None:
        self._screen = screen
        self._runtime = runtime
        self._notice = notice
        self._changed = changed
        """Called when a command starts or ends (the keys on offer change)."""
        self._workers: list[Worker[Any]] = []
        self._switches = 0
        """Thread switches a command asked for that have not happened yet."""
        self._held: list[tuple[str, str]] = []
        """Results of commands that ended while a switch was pending."""

    @property
    def busy(self) -> bool:
        """A command or a turn runs (Esc cancels it)."""
        runtime = self._runtime()
        if runtime is None:
            return False
        running = any(w.is_running for w in self._workers)
        return running or runtime.driver.running_turn is not None

    def run(self, text: str) -> None:
        worker = self._screen.run_worker(self._run(text), group="commands", exit_on_error=False)
        self._workers.append(worker)
        self._changed()

    async def _run(self, text: str) -> None:
        runtime = self._runtime()
        assert runtime is not None
        try:
            result = await runtime.commands.run(text)
        except asyncio.CancelledError:
            self._notice(
                "Cancelled. The conversation is as it was; nothing you typed was lost.", "warning"
            )
            raise
        finally:
            self._workers = [w for w in self._workers if w.is_running]
            self._screen.call_later(self._changed)
        if result.shown:
            note = (result.text, "success" if result.ok else "error")
            if self._switches:
                self._held.append(note)
            else:
                self._notice(*note)

    def cancel(self) -> bool:
        """Cancel the newest command still running, else the running turn (False: none)."""
        running = [w for w in self._workers if w.is_running]
        if running:
            running[-1].cancel()
            return True
        runtime = self._runtime()
        return runtime is not None and runtime.driver.cancel()

    def switch(self, switching: Callable[[], Awaitable[None]]) -> None:
        """A command asked for a thread switch: it happens once the command has returned;
        once none is pending, what commands said meanwhile shows, in the thread then shown."""
        self._switches += 1
        self._screen.call_later(self._switch, switching)

    async def _switch(self, switching: Callable[[], Awaitable[None]]) -> None:
        try:
            await switching()
        finally:
            self._switches -= 1
        while self._held and not self._switches:
            self._notice(*self._held.pop(0))
