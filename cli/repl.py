"""`trove --plain`: a prompt-toolkit REPL over the same engine as the TUI.

At a terminal the prompt stays live while a reply streams, so a prompt
typed meanwhile is queued in the driver's inbox (with its id) and runs in
order. The terminal stays in raw mode from the banner to the last prompt,
so every key, typed at any moment, reaches the next prompt in order. When
stdin is not a terminal, each line is handled after the previous one has
finished, which makes piped scripts deterministic.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from cli.printer import StreamPrinter
from cli.prompt_input import (
    KeepsLines,
    held_raw_input,
    prompt_history,
    prompt_history_path,
    put_history_in_place,
)
from cli.repl_input import InputLine
from engine.config import Config
from engine.driver import DriverClosedError
from engine.errors import TroveError
from engine.events import TurnEnd
from engine.model.backend import Backend
from engine.port import LogAppended, Notification, Unsubscribe
from engine.runtime import Runtime, open_thread
from engine.runtime.commands import Command, is_command
from engine.threads.draft import current_draft, keep_draft, withdrawn_text
from engine.threads.thread import resume_hint

if TYPE_CHECKING:  # prompt-toolkit is imported only when a terminal needs it
    from prompt_toolkit.document import Document


class PlainRepl(InputLine):
    """The REPL's front end: one open thread at a time, printed line by line.

    It is the FrontEnd the engine's /new, /fork, /threads ID and /quit ask to
    switch or leave; the switch happens once the command has returned.
    """

    def __init__(
        self, config: Config, home: Path, printer: StreamPrinter, backend: Backend | None = None
    ) -> None:
        self.config = config
        self.home = home
        self.printer = printer
        self.backend = backend
        InputLine.__init__(self)
        self._runtime: Runtime | None = None
        self._unsubscribe: Unsubscribe | None = None
        self._switch_to: list[str | None] = []
        self.running_command: asyncio.Task[None] | None = None
        self.quit_requested = False

    @property
    def runtime(self) -> Runtime:
        assert self._runtime is not None, "no thread is open"
        return self._runtime

    @property
    def has_runtime(self) -> bool:
        return self._runtime is not None

    # -- FrontEnd (engine.runtime.commands) ------------------------------------------------

    def open_thread(self, thread_id: str | None) -> None:
        self._switch_to = [thread_id]

    def quit(self) -> None:
        self.quit_requested = True

    def actions(self) -> Iterable[Command]:
        return ()

    def model_changed(self, backend: Backend) -> None:
        """/model switched the open thread's model: the next thread opened uses it too."""
        self.backend = backend

    # -- threads -----------------------------------------------------------------------

    def open(self, thread_id: str | None) -> None:
        """Open the first thread; a failure here is the caller's (a usage or runtime error)."""
        self._show(
            Runtime.open(
                self.config, self.home, thread_id=thread_id, backend=self.backend, front_end=self
            )
        )

    def _show(self, runtime: Runtime) -> None:
        self._runtime = runtime
        printed = self.printer.attach(runtime)
        offered = runtime.subscribe(lambda told: self._give_back_withdrawn(runtime, told))

        def unsubscribe() -> None:
            printed()
            offered()

        self._unsubscribe = unsubscribe

    def _give_back_withdrawn(self, runtime: Runtime, notification: Notification) -> None:
        """The prompts a turn withdrew when it failed before any reply (engine.threads.draft) go
        back into the live input line, once, ahead of anything typed since: Enter sends
        them again, and the model has them once. From a pipe there is no input line:
        the script's next line is what comes next."""
        if not isinstance(notification, LogAppended):
            return
        end = notification.event
        session = self._session
        if not isinstance(end, TurnEnd) or not end.withdrawn or session is None:
            return
        text = withdrawn_text(runtime.thread.log, end)
        typed = session.default_buffer.text
        if text and self.prefill(text + ("\n" + typed if typed else "")):
            self.printer.notice("[not answered: the prompt is back in the input, Enter resends it]")

    async def _switch(self, thread_id: str | None) -> None:
        """Open the other thread first (on failure nothing changes), then close this one;
        its queue stays in its log."""
        try:
            runtime = Runtime.assemble(
                self.config,
                self.home,
                await asyncio.to_thread(open_thread, self.config, self.home, thread_id),
                backend=self.backend,
                front_end=self,
            )
        except (TroveError, OSError) as exc:
            self.printer.error(f"could not open that thread: {exc}; you are still here")
            return
        old, unsubscribe = self._runtime, self._unsubscribe
        self._show(runtime)
        if unsubscribe is not None:
            unsubscribe()
        if old is not None:
            await old.aclose()
            self._closed(old)
        self.printer.notice(f"[thread {runtime.thread.id}]")

    def _closed(self, runtime: Runtime) -> None:
        """What closing a thread did beyond closing it (a /delete), said once."""
        if runtime.closing_notice is None:
            return
        if runtime.closing_failed:
            self.printer.error(runtime.closing_notice)
        else:
            self.printer.say(runtime.closing_notice)

    async def aclose(self) -> None:
        if self._runtime is not None:
            runtime, self._runtime = self._runtime, None
            await runtime.aclose()
            self._closed(runtime)

    # -- input -------------------------------------------------------------------------

    async def handle(self, line: str) -> None:
        """One line of input: a command runs now, anything else is queued (or, after
        /edit, sent in place of the last exchange)."""
        text = line.rstrip("\n")
        editing, self._editing = self._editing, None
        if editing is not None and (not text.strip() or is_command(text)):
            self.printer.notice("[edit dropped: the last exchange is unchanged]")
        elif editing is not None:
            self._resend(editing, text)
            return
        if not text.strip():
            return
        if is_command(text):
            result = await self.runtime.commands.run(text)
            if result.ok and result.shown:
                self.printer.say(result.text)
            elif not result.ok:
                self.printer.notice(result.text)
            if self._switch_to and not self.quit_requested:
                await self._switch(self._switch_to.pop())
            return
        if text.lstrip().startswith("//"):
            text = text.lstrip()[1:]
        driver = self.runtime.driver
        busy = driver.running_turn is not None or driver.reserved or bool(driver.inbox)
        try:
            item = driver.send(text)
        except (OSError, DriverClosedError) as exc:
            # Not accepted: say so, and hand the text back so it is not lost.
            self.printer.error(f"not sent: {exc}")
            self.printer.notice(f"not sent, your text was: {text}")
            return
        if busy:
            # Typed while a reply runs: say it was taken, and where it waits.
            waiting = [queued.id for queued in driver.inbox]
            if item in waiting:
                self.printer.notice(f"queued ({waiting.index(item) + 1})")

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
        from prompt_toolkit.patch_stdout import patch_stdout

        repl = self

        class SlashCompleter(Completer):
            def get_completions(self, document, complete_event):
                text = document.text_before_cursor
                if not text.startswith("/") or " " in text:
                    return
                for command in repl.runtime.commands:
                    if command.name.startswith(text[1:]):
                        yield Completion(
                            "/" + command.name,
                            start_position=-len(text),
                            display_meta=command.summary,
                        )

        terminal = held_raw_input()
        history = prompt_history(prompt_history_path(self.runtime.home))
        async for _ in history.load():  # read once: each prompt then has it in place at once
            pass
        session: PromptSession[str] = PromptSession(
            input=terminal, history=history, completer=SlashCompleter()
        )
        printer = self.printer
        self._session = session

        def message() -> str:
            # The reply's unfinished line sits above the input, so text shows as it
            # arrives without being drawn into the line being typed.
            partial = printer.partial
            mark = f"{self._question} [y/N] " if self._question else "› "
            return f"{partial}\n{mark}" if partial else mark

        def redraw() -> None:
            app = session.app
            if app.is_running:
                app.invalidate()

        printer.on_partial = redraw

        def history_in_place() -> None:
            put_history_in_place(session.default_buffer, history.get_strings())
            if self._next_default:  # given by a command as this line was starting
                text, self._next_default = self._next_default, ""
                session.default_buffer.text = text
                session.default_buffer.cursor_position = len(text)

        thread = self.runtime.thread
        # Raw mode from here on, between prompts too: Ctrl-C, Ctrl-D and text typed at any
        # moment wait in the terminal for the next prompt (held_raw_input).
        with terminal.held_raw_mode():
            backend = self.runtime.backend
            model = backend.label if backend is not None else self.runtime.config.model.name
            self.printer.say(
                f"trove · thread {thread.id} · model {model}"
                " — /help for commands, Ctrl-C cancels or clears, Ctrl-D quits"
            )
            # The prompt left unsent when the thread was last closed (engine.threads.draft).
            draft: Document | str = "" if thread.read_only else current_draft(thread.log)
            with patch_stdout(raw=True):
                while True:
                    try:
                        draft, self._next_default = draft or self._next_default, ""
                        line = await session.prompt_async(
                            message, default=draft, pre_run=history_in_place
                        )
                        draft = ""
                        if self._answered(line):
                            continue
                        history.accepted(line)
                    except KeyboardInterrupt:
                        draft = self._interrupt(session.default_buffer.document, history)
                        continue
                    except EOFError:  # only on an empty line: a kept draft was sent or dropped
                        keep_draft(thread.log, "")
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

    def _interrupt(self, typed: Document, history: KeepsLines) -> Document | str:
        """Ctrl-C at the prompt, as in the app: stop what runs, else clear the line.

        Returns what the next input line starts with. Stopping a reply or a
        command leaves the typed text in the line; with nothing running, a line
        with text is cleared and kept in this session's history (Up brings it
        back), and an empty line only says how to quit.
        """
        if self.cancel():
            return typed
        if self._editing is not None:
            self._editing = None
            if typed.text.strip():
                history.keep(typed.text)
            self.printer.notice("(edit dropped: the last exchange is unchanged; Up brings it back)")
            return ""
        if typed.text.strip():
            history.keep(typed.text)
            self.printer.notice("(line cleared: Up brings it back)")
        else:
            self.printer.notice("(nothing to cancel; Ctrl-D quits)")
        return ""

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
    repl = PlainRepl(config, home, printer, backend)
    repl.open(thread_id)
    hint = None
    try:
        if sys.stdin.isatty():
            await repl.run_tty()
        else:
            await repl.run_piped()
    finally:
        # The way back, at a terminal only: piped output stays exactly the answers.
        thread = repl.runtime.thread if repl.has_runtime else None
        if sys.stdin.isatty() and thread is not None and thread.has_history:
            hint = resume_hint(thread.id, home=thread.home, user_id=thread.user_id)
        await repl.aclose()
    if hint is not None:
        print(hint)
    return 1 if printer.errors and not sys.stdin.isatty() else 0


def run_plain(
    config: Config, home: Path, *, thread_id: str | None = None, backend: Backend | None = None
) -> int:
    return asyncio.run(_plain(config, home, thread_id, backend))
