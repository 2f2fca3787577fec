"""Where a streamed code block's lines are lexed: on the caller's turn, or off the UI loop.

Lexing is the costly part of a frame while a code block streams fast (Pygments
works through every new character in Python). Off the loop, a block sends its
new lines to one worker thread and shows the lines lexed so far; the result
comes back on the loop, where the block takes it and asks for a frame. A key
pressed meanwhile waits for the interpreter's lock at most a switch interval,
not for the whole lexing. One thread for every block: jobs run in the order
sent, and Pygments' token tables are filled by one thread at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

T = TypeVar("T")

_executor: ThreadPoolExecutor | None = None
_making = threading.Lock()


class Lexing(Protocol):
    def submit(self, job: Callable[[], T], done: Callable[[T], None]) -> None:
        """Run `job`, then `done` with its result on the caller's thread (the UI loop)."""
        ...


class Inline:
    """Lexes at once, on the caller's turn: a frame shows every line it read."""

    def submit(self, job: Callable[[], T], done: Callable[[T], None]) -> None:
        done(job())


class OffLoop:
    """Lexes in the shared worker thread; `done` runs on `loop` once the job is through,
    then `shown` (the widget asks for a frame).

    A job must not raise (a block's job falls back to plain text itself); a loop that
    has closed meanwhile drops the result.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, shown: Callable[[], None]) -> None:
        self._loop = loop
        self._shown = shown

    def submit(self, job: Callable[[], T], done: Callable[[T], None]) -> None:
        def finished(future: asyncio.Future[T]) -> None:
            if not future.cancelled() and future.exception() is None:
                done(future.result())
                self._shown()

        with contextlib.suppress(RuntimeError):  # the loop is closing: nothing to show it on
            self._loop.run_in_executor(_shared(), job).add_done_callback(finished)


def start() -> None:
    """Start the lexing thread now and wait for it (start-up's warm-up, in a worker
    thread): the first code block's first job would start it on the UI loop, which
    waits for a new thread to run."""
    _shared().submit(lambda: None).result()


def _shared() -> ThreadPoolExecutor:
    global _executor
    with _making:  # the warm-up's thread and the UI loop may both ask first
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trove-lexing")
        return _executor
