"""`trove --plain`: a prompt-toolkit REPL over the same engine as the TUI.

At a terminal the prompt stays live while a reply streams, so a prompt
typed meanwhile is queued in the driver's inbox (with its id) and runs in
order. When stdin is not a terminal, each line is handled after the
previous one has finished, which makes piped scripts deterministic.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

from engine.backend import Backend
from engine.commands import is_command
from engine.config import Config
from engine.driver import DriverClosedError
from engine.runtime import Runtime
from tui.printer import StreamPrinter


class PlainRepl:
    def __init__(self, runtime: Runtime, printer: StreamPrinter) -> None:
        self.runtime = runtime
        self.printer = printer
        self.running_command: asyncio.Task[None] | None = None
        self.quit_requested = False

        @runtime.commands.add("quit", "leave Trove (queued prompts stay in the thread)")
        async def _quit(args: str) -> str:
            self.quit_requested = True
            return "bye"

    async def handle(self, line: str) -> None:
        """One line of input: a command runs now, anything else is queued."""
        text = line.rstrip("\n")
        if not text.strip():
            return
        if is_command(text):
            result = await self.runtime.commands.run(text)
            if result.ok:
                self.printer.say(result.text)
            else:
                self.printer.notice(result.text)
            return
        if text.lstrip().startswith("//"):
            text = text.lstrip()[1:]
        try:
            self.runtime.driver.send(text)
        except (OSError, DriverClosedError) as exc:
            # Not accepted: say so, and hand the text back so it is not lost.
            self.printer.error(f"not sent: {exc}")
            self.printer.notice(f"not sent, your text was: {text}")

    def cancel(self) -> bool:
        """Ctrl-C: stop what is running (a command first, then the turn)."""
        if self.running_command is not None and not self.running_command.done():
            self.running_command.cancel()
            return True
        return self.runtime.driver.cancel()

    async def run_piped(self) -> None:
        while True:
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line:
                break
            await self.handle(line)
            if self.quit_requested:
                break
            await self.runtime.driver.when_idle()

    async def run_tty(self) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import Completer, Completion
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.patch_stdout import patch_stdout

        commands = self.runtime.commands

        class SlashCompleter(Completer):
            def get_completions(self, document, complete_event):  # type: ignore[no-untyped-def]
                text = document.text_before_cursor
                if not text.startswith("/") or " " in text:
                    return
                for command in commands:
                    if command.name.startswith(text[1:]):
                        yield Completion(
                            "/" + command.name,
                            start_position=-len(text),
                            display_meta=command.summary,
                        )

        history = prompt_history_path(self.runtime.home)
        session: PromptSession[str] = PromptSession(
            history=FileHistory(str(history)), completer=SlashCompleter()
        )
        thread = self.runtime.thread
        self.printer.say(
            f"trove · thread {thread.id} · model {self.runtime.config.model.name}"
            " — /help for commands, Ctrl-C cancels, Ctrl-D quits"
        )
        with patch_stdout(raw=True):
            while True:
                try:
                    line = await session.prompt_async("› ")
                except KeyboardInterrupt:
                    if not self.cancel():
                        self.printer.notice("(nothing to cancel; Ctrl-D quits)")
                    continue
                except EOFError:
                    break
                if not is_command(line):
                    await self.handle(line)
                elif self.running_command is not None and not self.running_command.done():
                    self.printer.notice("a command is still running; Ctrl-C cancels it")
                else:
                    # Commands run beside the prompt, so typing (and queueing
                    # prompts) goes on while a long one such as /compact runs.
                    self.running_command = asyncio.create_task(self.handle(line))
                    self.running_command.add_done_callback(
                        lambda task: self._after_command(session, task)
                    )
        await self._finish_command()

    def _after_command(self, session: object, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            self.printer.notice("[cancelled: the command stopped; nothing you typed was lost]")
        app = getattr(session, "app", None)
        if self.quit_requested and app is not None and app.is_running:
            app.exit(exception=EOFError())

    async def _finish_command(self) -> None:
        task = self.running_command
        if task is not None and not task.done():
            task.cancel()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _plain(
    config: Config, home: Path, thread_id: str | None, backend: Backend | None = None
) -> int:
    printer = StreamPrinter(whole_lines=sys.stdin.isatty())
    runtime = Runtime.open(config, home, thread_id=thread_id, backend=backend)
    printer.attach(runtime)
    repl = PlainRepl(runtime, printer)
    try:
        if sys.stdin.isatty():
            await repl.run_tty()
        else:
            await repl.run_piped()
    finally:
        await runtime.aclose()
    return 1 if printer.errors and not sys.stdin.isatty() else 0


def run_plain(
    config: Config, home: Path, *, thread_id: str | None = None, backend: Backend | None = None
) -> int:
    return asyncio.run(_plain(config, home, thread_id, backend))


def prompt_history_path(home: Path) -> Path:
    """The REPL's prompt history (every prompt typed), created private before use."""
    from engine.private import private_dir, touch_private

    return touch_private(private_dir(home, base=home) / "prompt-history")
