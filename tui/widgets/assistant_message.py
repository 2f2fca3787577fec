"""The reply being streamed: deltas buffered, drawn at a frame rate, whole once at the end.

However fast the model, the UI loop does one Markdown append per frame
(`FRAME`): a delta only joins a list and, if none is armed, arms the frame's
timer. Textual's ``Markdown.append`` re-parses from the last open block, so
finished blocks stay frozen and each frame costs the open tail, not the
reply; the end appends the last tail rather than rendering the reply anew.
Imported on the first reply, not at launch. The text shown (and
copied) is the reply made terminal-safe; an escape sequence split across
deltas is held back until it is whole, then dropped.
"""

from __future__ import annotations

import asyncio
import time

from textual.timer import Timer
from textual.widgets import Markdown

from engine.safe_text import SafeStream, safe_text

FRAME = 1 / 30
"""Seconds between draws of a streaming reply, at the least.

A frame that took longer to reach the screen (layout grows with everything
in the transcript) is followed by an idle gap as long as it took, so drawing
never holds the UI loop more than half the time and keystrokes get the rest.
"""


class AssistantMessage(Markdown):
    DEFAULT_CSS = """
    AssistantMessage {
        margin: 1 0 0 0;
        padding: 0 1;
        background: transparent;
    }
    AssistantMessage.-cancelled { border-left: outer $warning; }
    AssistantMessage.-interrupted { border-left: outer $error; }
    """

    def __init__(self, text: str = "", *, seq: int | None = None) -> None:
        text = safe_text(text)
        super().__init__(text)
        self.seq = seq
        self._parts: list[str] = [text]
        self._safe = SafeStream()
        self._pending: list[str] = []
        """Text written since the last frame was drawn."""
        self._frame: Timer | None = None
        self._drawing: asyncio.Task[None] | None = None
        self._busy = False
        """A frame is being drawn and has not reached the screen yet."""
        self._streamed = False
        self._finished = False

    @property
    def text(self) -> str:
        """The reply so far; joined on demand, since a delta must not copy the whole reply."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0]

    @text.setter
    def text(self, value: str) -> None:
        self._parts = [value]

    def write(self, fragment: str) -> None:
        """Called per delta; returns at once: the next frame draws it."""
        fragment = self._safe.feed(fragment)
        if not fragment or self._finished:
            return
        self._parts.append(fragment)
        self._pending.append(fragment)
        self._streamed = True
        if self._frame is None and not self._busy:
            self._frame = self.set_timer(FRAME, self._draw, name="reply frame")

    def _draw(self) -> None:
        self._frame = None
        if self._finished or not self._pending or self._busy:
            return
        fragment = "".join(self._pending)
        self._pending.clear()
        self._busy = True
        self._drawing = asyncio.ensure_future(self._append(fragment, time.monotonic()))

    async def _append(self, fragment: str, started: float) -> None:
        try:
            await self.append(fragment)
        finally:
            if not self.call_after_refresh(self._drawn, started):
                self._drawn(started)

    def _drawn(self, started: float) -> None:
        """The frame is on screen: the next one waits at least as long as this one took."""
        self._busy = False
        if self._pending and not self._finished and self._frame is None:
            cost = time.monotonic() - started
            self._frame = self.set_timer(max(FRAME, cost), self._draw, name="reply frame")

    async def finish(
        self, text: str, *, cancelled: bool = False, interrupted: bool = False
    ) -> None:
        """The final text from the log wins over whatever the frames showed.

        When it is the text that was streamed, only the part no frame drew yet
        is appended (after any frame still drawing), so the end costs the open
        tail, not a re-render of the whole reply; the reply may end in the
        same tick as its last delta, before any frame showed it. A different
        text (a torn or cleaned-up reply) is rendered whole, once.
        """
        text = safe_text(text)
        self._finished = True
        if self._frame is not None:
            self._frame.stop()
            self._frame = None
        tail = "".join(self._pending)
        self._pending.clear()
        drawing, self._drawing = self._drawing, None
        if drawing is not None:
            await asyncio.gather(drawing, return_exceptions=True)
        if self._streamed and text == self.text and self.source + tail == text:
            if tail:
                await self.append(tail)
        elif self._streamed or text != self.text:
            self.text = text
            await self.update(text)
        if cancelled:
            self.add_class("-cancelled")
        if interrupted:
            self.add_class("-interrupted")
