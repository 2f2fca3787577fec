"""The reply being streamed: drawn at a frame rate in frozen parts, one widget once finished.

However fast the model, the UI loop draws at most one frame per `FRAME`: a
delta only joins a list and, if none is armed, arms the frame's timer. While
it streams, a reply is a few `ReplyPart` children: finished Markdown blocks
are frozen into a part once (at least `FREEZE_CHARS` of them at a time, so a
long reply has tens of parts, not a widget per block), and only the open
tail is parsed and rendered again each frame. Once the log holds the reply,
it becomes one widget rendered from the log's text, exactly as a reply
replayed from the log (`PastReply`) is, so live and resumed replies look
the same and a long thread keeps one widget per reply.

Imported on the first reply, not at launch. The text shown (and copied) is
the reply made terminal-safe; an escape sequence split across deltas is held
back until it is whole, then dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from rich.markdown import Markdown as RichMarkdown
from textual.timer import Timer
from textual.widgets import Static

from engine.safe_text import SafeStream, safe_text
from tui.widgets.chat_message import PastReply

FRAME = 1 / 30
"""Seconds between draws of a streaming reply, at the least.

A frame that took longer to reach the screen is followed by an idle gap as
long as it took, so drawing never holds the UI loop more than half the time
and keystrokes get the rest.
"""
FRAME_WAIT = 1.0
"""Seconds the end waits, at most, for the frame showing the whole streamed text."""
FREEZE_CHARS = 500
"""Finished text frozen into a part at once: fewer parts, against a longer tail per frame."""


def split_open_block(source: RichMarkdown, text: str) -> int:
    """Where the last top-level block of `text` starts (0: it is all one open block).

    Everything before it is finished: a later delta can only extend or
    change the last block (an open fence, a list, a paragraph).
    """
    for token in reversed(source.parsed):
        if token.level == 0 and token.map is not None:
            line = token.map[0]
            if line == 0:
                return 0
            at = -1
            for _ in range(line):
                at = text.find("\n", at + 1)
                if at < 0:
                    return 0
            return at + 1
    return 0


class ReplyPart(Static):
    """A run of a streaming reply's Markdown blocks, rendered as one."""

    DEFAULT_CSS = """
    ReplyPart { height: auto; }
    ReplyPart.-after { margin-top: 1; }
    """

    def __init__(self, text: str, *, after: bool = False) -> None:
        super().__init__(RichMarkdown(text))
        self.source = text
        if after:
            self.add_class("-after")

    def show(self, source: RichMarkdown, text: str) -> None:
        self.source = text
        self.update(source)


class AssistantMessage(PastReply):
    def __init__(self, text: str = "", *, seq: int | None = None) -> None:
        self._parts: list[str] = []
        super().__init__(text, seq=seq)
        self._safe = SafeStream()
        self._pending: list[str] = []
        """Text written since the last frame was drawn."""
        self._open = ""
        """The text of the tail part: the blocks not frozen yet."""
        self._frozen: list[ReplyPart] = []
        self._tail: ReplyPart | None = None
        self._frame: Timer | None = None
        self._busy = False
        """A frame is being drawn and has not reached the screen yet."""
        self._streamed = False
        self._finished = False

    @property
    def text(self) -> str:
        """The reply so far; joined on demand, since a delta must not copy the whole reply."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @text.setter
    def text(self, value: str) -> None:
        self._parts = [value]

    @property
    def drawn(self) -> str:
        """The text the widget draws now: its parts while streaming, then the log's text."""
        if self._tail is None:
            return self.text
        return "".join(part.source for part in self._frozen) + self._tail.source

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
        if self._finished or not self._pending or self._busy or not self.is_mounted:
            return
        started = time.monotonic()
        self._show_pending()
        self._busy = True
        if not self.call_after_refresh(self._drawn, started):
            self._drawn(started)

    def _show_pending(self) -> None:
        """Draw what was written since the last frame: freeze finished blocks, redo the tail."""
        text = self._open + "".join(self._pending)
        self._pending.clear()
        source = RichMarkdown(text)
        split = split_open_block(source, text)
        if split >= FREEZE_CHARS:
            frozen = ReplyPart(text[:split], after=bool(self._frozen))
            self._frozen.append(frozen)
            text = text[split:]
            source = RichMarkdown(text)
            if self._tail is not None:
                self._tail.set_class(True, "-after")
                self.mount(frozen, before=self._tail)
            else:
                self.mount(frozen)
        self._open = text
        if self._tail is None:
            self._tail = ReplyPart(text, after=bool(self._frozen))
            self.mount(self._tail)
        else:
            self._tail.show(source, text)

    def _drawn(self, started: float) -> None:
        """The frame is on screen: the next one waits at least as long as this one took."""
        self._busy = False
        if self._pending and not self._finished and self._frame is None:
            cost = time.monotonic() - started
            self._frame = self.set_timer(max(FRAME, cost), self._draw, name="reply frame")

    async def _next_frame(self) -> None:
        """Until the screen has drawn what is shown now (the app's queue: this widget may
        be removed meanwhile, which would drop its own callbacks), at most `FRAME_WAIT`."""
        done = asyncio.get_running_loop().create_future()

        def drawn() -> None:
            if not done.done():
                done.set_result(None)

        if self.app.call_after_refresh(drawn):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done, FRAME_WAIT)

    async def finish(
        self, text: str, *, cancelled: bool = False, interrupted: bool = False
    ) -> None:
        """The final text from the log wins over whatever the frames showed.

        When it is the text that was streamed, the part no frame drew yet is
        drawn first, so the whole reply is on screen at the cost of the open
        tail; the reply may end in the same tick as its last delta, before
        any frame showed it. Then, after that frame, the parts give way to
        one render of the log's text (a torn or cleaned-up reply goes
        straight to it).
        """
        text = safe_text(text)
        self._finished = True
        if self._frame is not None:
            self._frame.stop()
            self._frame = None
        if self._streamed and text == self.text and self.is_mounted:
            if self._pending:
                self._show_pending()
            await self._next_frame()
        self.text = text
        self._frozen.clear()
        self._tail = None
        self._open = ""
        if self.is_mounted:
            with self.app.batch_update():
                await self.remove_children()
                self.update(RichMarkdown(text))
        else:
            self.update(RichMarkdown(text))
        if cancelled:
            self.add_class("-cancelled")
        if interrupted:
            self.add_class("-interrupted")
