"""The REPL's prompt-toolkit pieces: terminal input held raw for the whole session,
and the prompt history (its private file, a line kept for this session, and the
lines put in place before a prompt reads its first key)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from prompt_toolkit.buffer import Buffer


def prompt_history_path(home: Path) -> Path:
    """The REPL's prompt history (every prompt typed), created private before use."""
    from engine.util.private import private_dir, touch_private

    return touch_private(private_dir(home, base=home) / "prompt-history")


def held_raw_input() -> Any:
    """The REPL's terminal input, which can hold raw mode for the whole session.

    prompt-toolkit gives the terminal back to the line discipline between two
    prompts and while it prints above a live one, and a key typed then was lost to
    it (Ctrl-C a SIGINT that flushed earlier keys, Ctrl-D an end-of-file nobody
    read, text echoed into the reply). Inside `held_raw_mode()` those switches do
    nothing, so every key waits in the terminal, in order, for the next prompt.
    """
    from prompt_toolkit.input.vt100 import Vt100Input

    class HeldRawInput(Vt100Input):
        _held = False

        @contextlib.contextmanager
        def held_raw_mode(self) -> Iterator[None]:
            """Raw mode until the block ends, whatever prompts start and stop inside it;
            the terminal's modes from before are restored then."""
            with super().raw_mode():
                self._held = True
                try:
                    yield
                finally:
                    self._held = False

        def raw_mode(self) -> AbstractContextManager[None]:
            return contextlib.nullcontext() if self._held else super().raw_mode()

        def cooked_mode(self) -> AbstractContextManager[None]:
            return contextlib.nullcontext() if self._held else super().cooked_mode()

    return HeldRawInput(sys.stdin)


def put_history_in_place(buffer: Buffer, lines: list[str]) -> None:
    """A prompt's history, in place before the prompt handles its first key.

    prompt-toolkit fills a prompt's history from a task that its first drawing
    starts, after it has handled the keys read along with the previous Enter (its
    typeahead): an Up typed right after Enter found no history and did nothing.
    The lines go in now, and the buffer's own loading is marked done so that it
    does not add them a second time. This reaches into the Buffer's working
    lines (which prompt-toolkit's own commands use); a pty test covers it.
    """
    document = buffer.document
    buffer._working_lines = collections.deque([*lines, document.text])
    buffer.working_index = len(lines)  # resets the cursor, put back below
    buffer.cursor_position = document.cursor_position
    loaded: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    loaded.set_result(None)
    buffer._load_history_task = loaded


class KeepsLines(Protocol):
    def keep(self, text: str) -> None: ...


def prompt_history(path: Path) -> Any:
    """The REPL's FileHistory, which can also hold a line for this session only.

    A line cleared with Ctrl-C comes back with Up, as the app's prompt keeps
    it, but reaches the file only if it is sent after all (`accepted`:
    prompt-toolkit does not store a line equal to the newest one it holds).
    """
    from prompt_toolkit.history import FileHistory

    class PromptHistory(FileHistory):
        def __init__(self, filename: str) -> None:
            super().__init__(filename)
            self._keeping = False
            self._unsaved: set[str] = set()

        def keep(self, text: str) -> None:
            strings = self.get_strings()
            if strings and strings[-1] == text:
                return
            self._unsaved.add(text)
            self._keeping = True
            try:
                self.append_string(text)
            finally:
                self._keeping = False

        def accepted(self, line: str) -> None:
            if line in self._unsaved:
                self.store_string(line)

        def store_string(self, string: str) -> None:
            if not self._keeping:
                self._unsaved.discard(string)
                super().store_string(string)

    return PromptHistory(str(path))
