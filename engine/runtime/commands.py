"""Slash commands: direct control of the session, never model input.

A command run is logged as `command/run` … `command/done` and nothing else:
it never enters the surface and never consumes a turn number. The engine
registers every command a thread has (engine.runtime.builtin); a front end
supplies, through its FrontEnd hook, the few whose effect is on its own
screen (a help screen, a pane, the clipboard), so /help, completion and the
command palette all read one list in every front end.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, Literal, Protocol

from msgspec import Struct

from engine.errors import TroveError
from engine.events import CommandDone, CommandRun
from engine.log import LogWriteError, SessionLog

Handler = Callable[[str], Awaitable[str]]
Show = Literal["result", "quiet"]
"""What a front end shows of a successful run: its text ("result"), or nothing
("quiet": the command's effect, a screen or a thread switch, says it). A
failure's text is always shown."""


class CommandError(TroveError):
    """A command refused or failed; str(e) is the exact text the user sees."""


class Command(Struct, frozen=True):
    name: str
    summary: str
    handler: Handler
    takes_args: bool = False
    usage: str = ""
    show: Show = "result"


class CommandResult(Struct, frozen=True):
    name: str
    ok: bool
    text: str
    show: Show = "result"

    @property
    def shown(self) -> bool:
        """Whether a front end shows the text: always on failure, else as the command says."""
        return not self.ok or self.show == "result"


class _Lifecycle(Struct, eq=False):  # each run is itself: two /help runs are two lifecycles
    """One command run's `command/run` … `command/done`, as far as the log has it."""

    name: str
    args: str
    run: int | None = None
    """Seq of its `command/run` (None: not in the log, or cannot be)."""
    end: tuple[str | None, str | None] | None = None
    """(error, result) of a run that ended before its thread was on disk."""


class FrontEnd(Protocol):
    """What a front end supplies to the commands whose effect is on its side."""

    def open_thread(self, thread_id: str | None) -> None:
        """Switch to this thread (None: a new one) once the running command has returned."""

    def quit(self) -> None:
        """Leave once the running command has returned."""

    def actions(self) -> Iterable[Command]:
        """Commands only this front end carries out; one named like an engine command
        replaces it (a help screen instead of help text)."""


def is_command(text: str) -> bool:
    """A line starting with one slash and a word; '//x' is an escaped prompt."""
    stripped = text.strip()
    return stripped.startswith("/") and not stripped.startswith("//") and len(stripped) > 1


class CommandRegistry:
    def __init__(self, log: SessionLog) -> None:
        self.log = log
        self._commands: dict[str, Command] = {}
        self._running: set[asyncio.Task[Any]] = set()
        self._unwritten: list[_Lifecycle] = []
        """Runs in a thread not on disk yet, logged when its first message makes it."""
        if not log.exists:
            log.on_create.append(self._write_unwritten)

    def register(self, command: Command) -> None:
        self._commands[command.name] = command

    def add(
        self,
        name: str,
        summary: str,
        *,
        takes_args: bool = False,
        usage: str = "",
        show: Show = "result",
    ) -> Callable[[Handler], Handler]:
        """Decorator form of register."""

        def wrap(handler: Handler) -> Handler:
            self.register(Command(name, summary, handler, takes_args, usage, show))
            return handler

        return wrap

    def __iter__(self) -> Iterator[Command]:
        return iter(sorted(self._commands.values(), key=lambda c: c.name))

    def get(self, name: str) -> Command | None:
        return self._commands.get(name)

    def resolve(self, text: str) -> tuple[Command, str]:
        """Find the command for a line, or say exactly why not."""
        word, _, rest = text.strip()[1:].partition(" ")
        name = word.lower()
        command = self._commands.get(name)
        if command is None:
            close = difflib.get_close_matches(name, list(self._commands), n=1, cutoff=0.5)
            hint = f" (did you mean /{close[0]}?)" if close else " (type /help for the list)"
            raise CommandError(f"unknown command /{word}{hint}")
        args = rest.strip()
        if args and not command.takes_args:
            raise CommandError(f"/{name} takes no arguments (got {args!r})")
        return command, args

    async def run(self, text: str) -> CommandResult:
        """Resolve and run one command line, logging its lifecycle."""
        try:
            command, args = self.resolve(text)
        except CommandError as exc:
            return CommandResult(text.strip().split()[0][1:], False, str(exc))
        life = _Lifecycle(command.name, args)
        if self.log.exists:
            self._start(life)
        else:
            # A command does not make a thread (its first message does): its lifecycle
            # waits, and is logged ahead of that message, or never if none comes.
            self._unwritten.append(life)
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
        try:
            return await self._run_logged(command, args, life)
        finally:
            if task is not None:
                self._running.discard(task)

    def _start(self, life: _Lifecycle) -> None:
        try:
            life.run = self.log.append(CommandRun(name=life.name, args=life.args)).seq
        except LogWriteError:
            # A full disk or a read-only view: the command still runs (/quit, /new
            # and /help must work then), unlogged; /compact meets the disk itself.
            life.run = None

    def _write_unwritten(self) -> None:
        """The thread's first append is making its log: the runs before it go first."""
        waiting, self._unwritten = self._unwritten, []
        for life in waiting:
            self._start(life)
            if life.end is not None:
                self._done(life, error=life.end[0], result=life.end[1])

    async def _run_logged(self, command: Command, args: str, life: _Lifecycle) -> CommandResult:
        try:
            result = await command.handler(args)
        except CommandError as exc:
            self._done(life, error=str(exc))
            return CommandResult(command.name, False, str(exc), command.show)
        except asyncio.CancelledError:
            self._done(life, error="cancelled")
            raise
        except Exception as exc:  # a command bug is reported, not a traceback
            text = f"/{command.name} failed: {type(exc).__name__}: {exc}"
            self._done(life, error=text)
            return CommandResult(command.name, False, text, command.show)
        self._done(life, result=result)
        return CommandResult(command.name, True, result, command.show)

    def _done(
        self, life: _Lifecycle, *, error: str | None = None, result: str | None = None
    ) -> None:
        """The lifecycle's end; the result stands even when the disk cannot record it."""
        if life in self._unwritten:
            life.end = (error, result)
            return
        if life.run is None:
            return
        with contextlib.suppress(LogWriteError):
            self.log.append(CommandDone(name=life.name, run=life.run, error=error, result=result))

    async def aclose(self) -> None:
        """Cancel running commands and wait until each has unwound (its bracket closed)."""
        current = asyncio.current_task()
        tasks = [task for task in self._running if task is not current and not task.done()]
        for task in tasks:
            task.cancel("session closing")
        if tasks:
            await asyncio.wait(tasks)

    def help_text(self) -> str:
        width = max((len(c.name) + len(c.usage) for c in self), default=0) + 2
        lines = []
        for command in self:
            label = f"/{command.name}{(' ' + command.usage) if command.usage else ''}"
            lines.append(f"  {label:<{width}} {command.summary}")
        return "Commands:\n" + "\n".join(lines)
