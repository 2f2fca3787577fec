"""A thread being opened in its own OS thread, handed to exactly one owner.

Opening a thread (reading and replaying its log, recovering its archive,
building its surface) is blocking work, so it never runs on the UI loop.
Whoever ends up with the open `Thread` must close it, or its writer lock
stays held: an `Opening` makes that hold whatever happens to the one
waiting for it. If the waiting
task is cancelled (the app quit mid-replay), the thread is closed as soon
as its open ends; an opening nobody claimed is closed by `discard()`.

The app's start-up uses one for the thread named on the command line: begun
before Textual is imported, the replay runs beside the app's own start-up
(reading the file waits on the disk without the GIL, and the start-up's
waits lend the replay the interpreter) instead of after its first frame.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from pathlib import Path

from engine.config import Config
from engine.runtime import open_thread
from engine.surface import Surface
from engine.surface.kept import for_log
from engine.threads.thread import Thread
from tui import drawn_lines
from tui.drawn_lines import DrawnReply


class Opening:
    """One `open_thread` call (a thread another process writes opens as a read-only view),
    running from construction; claimed once, then awaited."""

    def __init__(
        self, config: Config, home: Path, thread_id: str | None, new_id: str | None = None
    ) -> None:
        self._future: concurrent.futures.Future[Thread] = concurrent.futures.Future()
        self._claimed = False
        self._surface: tuple[Surface, int] | None = None
        self.kept: dict[int, DrawnReply] = {}
        """The replies' lines its last session drew (tui.drawn_lines), read with the open."""
        self._lock = threading.Lock()
        threading.Thread(
            target=self._open,
            args=(config, home, thread_id, new_id),
            name="trove-open",
            daemon=True,
        ).start()

    def _open(self, config: Config, home: Path, thread_id: str | None, new_id: str | None) -> None:
        self._future.set_running_or_notify_cancel()  # from here on it cannot be cancelled
        try:
            thread = open_thread(config, home, thread_id, new_id, view_if_locked=True)
        except BaseException as exc:  # raised again where the open is awaited
            self._future.set_exception(exc)
            return
        try:
            # The surface too (from the resume index, or replayed): off the loop, and
            # nothing can append to the log before the owner has it.
            self._surface = (for_log(thread.log), len(thread.log.events))
        except Exception:  # noqa: BLE001 - built again on the loop, which reports the problem
            self._surface = None
        if thread.log.exists:
            self.kept = drawn_lines.load(thread.dir)
        self._future.set_result(thread)

    def claim(self) -> bool:
        """Become the owner of the opened thread (False: someone already did)."""
        with self._lock:
            if self._claimed:
                return False
            self._claimed = True
            return True

    def opened(self) -> Thread | None:
        """The opened thread if its open is already over and succeeded (None: it is still
        running, or failed: `thread()` says how), for an owner that must not wait."""
        if not self._future.done() or self._future.exception() is not None:
            return None
        return self._future.result()

    async def thread(self) -> Thread:
        """The opened thread, for the owner; a failed open raises its error here."""
        try:
            return await asyncio.wrap_future(self._future)
        except asyncio.CancelledError:
            self._future.add_done_callback(_close_opened)
            raise

    def surface(self, thread: Thread) -> Surface | None:
        """The surface replayed with the open, while the log is still what it replayed."""
        built = self._surface
        if built is None or built[1] != len(thread.log.events):
            return None
        return built[0]

    def discard(self) -> None:
        """Close the thread if nobody claimed it (waits for its open to end)."""
        if self.claim():
            _close_opened(self._future)


def _close_opened(future: concurrent.futures.Future[Thread]) -> None:
    """Close what the open gave (waiting for it to end), if it gave a thread."""
    try:
        thread = future.result()
    except BaseException:  # noqa: BLE001 - an open that failed holds nothing
        return
    thread.close()
