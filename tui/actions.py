"""Commands only the Textual app can carry out, for the engine's registry.

They live in the same registry as every other command (so /help, slash
completion and the command palette read one list); their handlers reach
the chat screen through the narrow Shell hook below (tui.screens.front_end),
not through the screen itself.
"""

from __future__ import annotations

from typing import Protocol

from engine.runtime.commands import Command


class Shell(Protocol):
    """What these commands need from the chat screen."""

    def show_help(self) -> None: ...

    def choose_thread(self) -> None: ...

    async def switch_to(self, ref: str) -> str: ...

    def choose_rewind(self) -> None: ...

    async def rewind_to(self, args: str) -> None: ...

    async def toggle_inspector(self) -> None: ...


def app_actions(shell: Shell) -> list[Command]:
    async def _help(args: str) -> str:
        shell.show_help()
        return "help shown"

    async def _threads(args: str) -> str:
        if args:
            return await shell.switch_to(args)  # a CommandError says why it cannot
        shell.choose_thread()
        return "threads"

    async def _rewind(args: str) -> str:
        if args:
            await shell.rewind_to(args)  # a CommandError says why it cannot
            return "rewound"
        shell.choose_rewind()
        return "rewind"

    async def _archive(args: str) -> str:
        await shell.toggle_inspector()
        return "inspector toggled"

    return [
        Command("help", "list commands and keys", _help, show="quiet"),
        Command(
            "threads",
            "switch to another thread (/threads N, or an id or its prefix)",
            _threads,
            takes_args=True,
            usage="[THREAD]",
            show="quiet",
        ),
        Command(
            "rewind",
            "go back to before an earlier prompt (Esc Esc, or /rewind N)",
            _rewind,
            takes_args=True,
            usage="[N]",
            show="quiet",
        ),
        Command("archive", "show or hide the archive inspector", _archive, show="quiet"),
    ]
