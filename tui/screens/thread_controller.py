"""Which thread the chat screen shows: opening, switching and closing its Runtime.

The blocking part of opening a thread (replay, recovery, its surface) runs in its own
OS thread (tui.startup.opening); the old Runtime is closed only once the new thread has
opened, so a thread that cannot be opened changes nothing. The screen follows through
the `attach` and `detach` callbacks it is made with.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from engine.config import Config
from engine.log import LogCorruptError
from engine.model import ClientFactory, ModelClient
from engine.model.backend import Backend
from engine.runtime import Runtime, open_thread
from engine.runtime.commands import FrontEnd
from engine.surface import Surface
from engine.threads.paths import ThreadNotFoundError
from engine.threads.thread import Thread
from tui.drawn_lines import Kept
from tui.startup.opening import Opening


class Opened(NamedTuple):
    """What an open gives: the thread, and what was read beside it in the open's thread."""

    thread: Thread
    surface: Surface | None = None
    kept: Kept | None = None


class ThreadController:
    def __init__(
        self,
        config: Config,
        home: Path,
        *,
        front_end: FrontEnd,
        attach: Callable[[Runtime, Kept | None], None],
        detach: Callable[[Runtime], None],
        model: ModelClient | ClientFactory | None = None,
        backend: Backend | None = None,
    ) -> None:
        self.config = config
        self.home = home
        self.front_end = front_end
        self._on_open = attach
        self._on_close = detach
        self.model = model
        self.backend = backend
        self.runtime: Runtime | None = None

    def use_model(self, backend: Backend) -> None:
        """/model switched the model: the threads opened from now on talk to it."""
        self.backend = backend
        self.model = None  # a client given at launch (tests) gives way to the backend's

    async def _load(self, thread_id: str | None, new_id: str | None = None) -> Opened:
        opening = Opening(self.config, self.home, thread_id, new_id)
        opening.claim()
        return await _opened(opening)

    def _start(self, opened: Opened, *, said: str | None = None) -> None:
        """Show the opened thread; `said` is what closing the last one did (a /delete of
        it), shown with the new thread's notices."""
        runtime = Runtime.assemble(
            self.config,
            self.home,
            opened.thread,
            surface=opened.surface,
            model=self.model,
            backend=self.backend,
            front_end=self.front_end,
            defer_continuity=True,  # completed once the first frame is drawn (warm_up)
        )
        if said is not None:
            runtime.notices.append(said)
        self.runtime = runtime
        self._on_open(runtime, opened.kept)

    def start_new(self, new_id: str | None = None) -> None:
        """Start a new thread now: it is nothing on disk until its first message
        (`Thread.pending`), so making it reads and waits on nothing."""
        self._start(Opened(open_thread(self.config, self.home, None, new_id)))

    def start_opened(self, opening: Opening) -> bool:
        """Start the thread `opening` has already opened, now, without awaiting anything
        (False: its open is still running or failed; `open_first` then waits for it)."""
        thread = opening.opened()
        if thread is None:
            return False
        self._start(Opened(thread, opening.surface(thread), opening.kept))
        return True

    async def open_first(
        self,
        thread_id: str | None,
        new_id: str | None = None,
        *,
        opening: Opening | None = None,
    ) -> str | None:
        """Open the thread asked for (or take its open, begun earlier: `opening`); when
        its log cannot be opened, say why (the returned text) and open a new thread
        instead: the old one stays as it is on disk."""
        problem = None
        try:
            if opening is not None:
                opened = await _opened(opening)
            else:
                opened = await self._load(thread_id, new_id)
        except (LogCorruptError, ThreadNotFoundError) as exc:
            opened = await self._load(None)
            problem = str(exc)
        self._start(opened)
        return problem

    async def switch(self, thread_id: str | None) -> str | None:
        """Open another thread (or a new one), then close this one; its queue stays in its
        log. When the other thread cannot be opened, nothing changes: returns why."""
        try:
            opened = await self._load(thread_id)
        except (LogCorruptError, ThreadNotFoundError, OSError) as exc:
            return str(exc)
        old = self.runtime
        await self.close()
        self._start(opened, said=old.closing_notice if old is not None else None)
        return None

    async def close(self) -> None:
        if self.runtime is not None:
            runtime, self.runtime = self.runtime, None
            self._on_close(runtime)
            await runtime.aclose()


async def _opened(opening: Opening) -> Opened:
    thread = await opening.thread()
    return Opened(thread, opening.surface(thread), opening.kept)
