"""The REPL's input line as the engine's commands use it: questions, prefills, /edit, /copy.

At a terminal there is one live prompt-toolkit line: /rewind N and /edit put
text in it, /delete's question is answered on it, and /copy sends OSC 52 to
the terminal besides the system clipboard. From a pipe there is none: the
script's next line answers or replaces, and the text a command would have put
in the line is printed.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from cli.printer import StreamPrinter
from engine.driver import DriverClosedError
from engine.mcp import Answer, ConsentRequest
from engine.runtime import Runtime
from engine.runtime.commands import CommandError
from engine.runtime.rewind import RewindPoint, RewindRefused, resend
from engine.util.clipboard import osc52, system_copy, where_copied
from engine.util.safe_text import safe_text

CONSENT_ARGS_CHARS = 400
"""Characters of a tool's arguments a consent question shows."""


class InputLine:
    """The hooks of engine.runtime.commands' FrontEnd that need the input line."""

    printer: StreamPrinter

    def __init__(self) -> None:
        self._session: Any = None
        """The live prompt-toolkit session at a terminal (None: lines come from a pipe)."""
        self._answer: asyncio.Future[bool] | None = None
        self._question = ""
        """A command's yes/no question waiting for the next line (`confirm`)."""
        self._editing: int | None = None
        """The turn whose prompt /edit opened: the next line sent replaces that exchange."""
        self._next_default = ""
        """Text for the next input line, when a command gave it with no line live."""

    @property
    def runtime(self) -> Runtime:
        raise NotImplementedError

    def prefill(self, text: str) -> bool:
        """`/rewind N`: the prompt's text into the live input line, ready to edit and send.
        From a pipe there is no input line: False, and the command prints the text."""
        session = self._session
        if session is None:
            return False
        if not session.app.is_running:  # between two lines: the next one starts with it
            self._next_default = text
            return True
        from prompt_toolkit.document import Document

        session.default_buffer.set_document(Document(text, len(text)), bypass_readonly=True)
        session.app.invalidate()
        return True

    def edit_prompt(self, point: RewindPoint) -> str:
        """`/edit`: the last prompt in the input line; the next line sent replaces the
        exchange it began. From a pipe, the script's next line does."""
        self._editing = point.turn
        if self.prefill(point.text):
            return (
                "[editing your last prompt: Enter sends it in its place (the exchange it began"
                " is kept as a branch); Ctrl-C drops the edit]"
            )
        return (
            "Editing the last prompt: the next line replaces it (the exchange it began is kept"
            " as a branch). It was:\n" + safe_text(point.text)
        )

    async def copy(self, text: str, what: str) -> str:
        """/copy: OSC 52 to the terminal (at one) and the system clipboard."""
        text = safe_text(text)
        osc = self._session is not None and sys.stdout.isatty()
        if osc:
            sys.stdout.write(osc52(text))
            sys.stdout.flush()
        tool = await asyncio.to_thread(system_copy, text)
        if tool is None and not osc:
            raise CommandError(where_copied(what, None, osc=False))
        return where_copied(what, tool, osc=osc)

    async def confirm(self, question: str) -> bool:
        """A yes/no question (/delete): the next line typed answers it, y or yes for yes.
        From a pipe, the script's next line answers it (none: no)."""
        if self._session is None:
            self.printer.say(f"{question} [y/N]")
            line = await asyncio.to_thread(sys.stdin.readline)
            return _yes(line)
        self._answer = asyncio.get_running_loop().create_future()
        self._question = question
        self._session.app.invalidate()
        try:
            return await self._answer
        finally:
            self._answer, self._question = None, ""

    async def ask_consent(self, request: ConsentRequest) -> Answer:
        """A tool not in `allow` (engine.mcp): a y/n question, its arguments shown escaped
        and cut to a few lines' worth; no runs nothing and tells the model so."""
        args = request.arguments
        if len(args) > CONSENT_ARGS_CHARS:
            args = args[:CONSENT_ARGS_CHARS] + f"… ({len(request.arguments):,} characters)"
        question = f"Run {request.tool} from MCP server {request.server} with {args}?"
        return "once" if await self.confirm(question) else "deny"

    def _answered(self, line: str) -> bool:
        """Whether `line` answered a waiting question (and so is no prompt or command)."""
        answer = self._answer
        if answer is None or answer.done():
            return False
        answer.set_result(_yes(line))
        return True

    def _resend(self, turn: int, text: str) -> None:
        """The line after /edit: it replaces the last exchange, kept as a branch. Refused,
        it is given back (the input line at a terminal, else printed) and the edit goes on."""
        if text.lstrip().startswith("//"):
            text = text.lstrip()[1:]
        try:
            resend(self.runtime.driver, self.runtime.thread.log, turn, text)
        except RewindRefused as exc:
            self._editing = turn
            self.printer.notice(f"[{exc}]")
            if not self.prefill(text):
                self.printer.notice(f"not sent, your text was: {text}")
        except (OSError, DriverClosedError) as exc:
            self.printer.error(f"not sent: {exc}")
            if not self.prefill(text):
                self.printer.notice(f"not sent, your text was: {text}")


def _yes(line: str) -> bool:
    return line.strip().lower() in ("y", "yes")
