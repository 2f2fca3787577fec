"""`trove -p "question"`: one turn, the answer on stdout, then exit.

The prompt can come from stdin too, as with other command-line LLM tools:
`-p -` reads the whole prompt from stdin, and `-p QUESTION` with stdin that is
not a terminal appends what stdin holds (see `oneshot_prompt`). A prompt that
is a command (`-p /export`) runs it instead, with no one to ask a question
(engine.runtime.commands_threads). A thread `-p` begins is marked as such.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import BinaryIO

from cli.printer import StreamPrinter
from engine.config import Config
from engine.errors import TroveError
from engine.events import SessionOneShot
from engine.mcp import Answer, ConsentRequest
from engine.model.backend import Backend
from engine.runtime import Runtime
from engine.runtime.commands import is_command

STDIN_PROMPT = "-"
"""`-p -`: the prompt is stdin's text."""


class PromptUsageError(TroveError, ValueError):
    """The prompt `-p` would send is empty or unreadable: a usage error (exit 2)."""


def oneshot_prompt(question: str, stdin: BinaryIO | None) -> str:
    """The text `-p` sends: the question, then a blank line and stdin's text.

    `stdin` is read to its end only when it is not a terminal (a pipe, a file,
    /dev/null): a script run at a terminal must not wait for typing. `-p -`
    reads it wherever it is (at a terminal, until Ctrl-D) and sends it alone.
    Stdin's text loses its trailing newlines and counts only when something
    else is left. It must be UTF-8 (a leading byte-order mark is dropped):
    other bytes are an error naming the first bad byte, never a silently
    altered prompt. One read and one join, so a large input costs its size.
    """
    if question == STDIN_PROMPT:
        text = _read_stdin(stdin)
        if not text.strip():
            raise PromptUsageError("-p -: stdin is empty; nothing to send")
        return text
    if not question.strip():
        raise PromptUsageError('-p: the prompt is empty (give text, or "-p -" to read stdin)')
    if stdin is None or stdin.isatty() or is_command(question):  # a command takes no stdin
        return question
    extra = _read_stdin(stdin)
    return f"{question}\n\n{extra}" if extra.strip() else question


def _read_stdin(stdin: BinaryIO | None) -> str:
    if stdin is None:  # started with no stdin at all (fd 0 closed)
        return ""
    data = stdin.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PromptUsageError(
            f"-p: stdin is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
    return text.rstrip("\r\n")


def stdin_bytes() -> BinaryIO | None:
    """The process's stdin as bytes, or None when it has none."""
    stream = sys.stdin
    return None if stream is None else stream.buffer


async def _oneshot(
    config: Config, home: Path, prompt: str, thread_id: str | None, backend: Backend | None = None
) -> int:
    printer = StreamPrinter()
    runtime = Runtime.open(config, home, thread_id=thread_id, backend=backend)
    printer.attach(runtime)
    if runtime.mcp is not None:
        runtime.mcp.consent = _denier(printer)
    failed = False
    try:
        if is_command(prompt):
            result = await runtime.commands.run(prompt)
            failed = not result.ok
            if failed:
                printer.error(result.text)
            elif result.shown:
                printer.say(result.text)
            await runtime.driver.when_idle()  # a turn the command began (/retry) ends first
        else:
            if prompt.lstrip().startswith("//"):  # an escaped slash: a prompt, not a command
                prompt = prompt.lstrip()[1:]
            if not runtime.thread.log.exists:
                runtime.thread.log.append(SessionOneShot())  # `trove threads` marks it
            runtime.driver.send(prompt)
            await runtime.driver.when_idle()
    finally:
        await runtime.aclose()
    if runtime.closing_notice is not None:  # a /delete of the thread itself
        failed = failed or runtime.closing_failed
        (printer.error if runtime.closing_failed else printer.say)(runtime.closing_notice)
    return 1 if printer.errors or failed else 0


def _denier(printer: StreamPrinter) -> Callable[[ConsentRequest], Awaitable[Answer]]:
    """-p asks no one: a tool not in `allow` is denied, and stderr says so in one line."""

    async def deny(request: ConsentRequest) -> Answer:
        printer.notice(
            f"trove: denied {request.tool} from MCP server {request.server}: -p runs only the"
            f" tools in mcp.servers.{request.server}.allow"
        )
        return "deny"

    return deny


def run_oneshot(
    config: Config,
    home: Path,
    prompt: str,
    *,
    thread_id: str | None = None,
    backend: Backend | None = None,
) -> int:
    """One turn on `prompt` (already read, see `oneshot_prompt`); 1 if the turn failed."""
    return asyncio.run(_oneshot(config, home, prompt, thread_id, backend))
