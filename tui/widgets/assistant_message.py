"""The reply being streamed: drawn at a frame rate from cached lines, one widget throughout.

However fast the model, the UI loop draws at most one frame per `FRAME`
(fewer while the user types: `TYPING_FRAME`): a delta only joins a list
and, if none is armed, arms the frame's timer. While
it streams, the reply draws itself line by line: finished Markdown blocks are
frozen into runs (at least `FREEZE_CHARS` of them at a time) whose lines are
rendered once at the current width and kept, and only the open tail is
parsed and rendered again each frame, once, for both the layout's measure
and the drawing. The widget's height is a count of lines, no child is ever
mounted, and a frame costs one layout. Once the log holds the reply, it
shows the log's text rendered exactly as a reply replayed from the log
(`PastReply`) is, so live and resumed replies look the same; that one
render of the whole text runs in a worker thread while the streamed lines
stay on screen, so a long reply's end does not hold the loop.

Imported on the first reply, not at launch. The text shown (and copied) is
the reply made terminal-safe; an escape sequence split across deltas is held
back until it is whole, then dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from rich.markdown import Markdown as RichMarkdown
from textual import getters
from textual.geometry import Size
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.timer import Timer
from textual.visual import Visual, visualize

from engine.util.safe_text import SafeStream, safe_text
from tui.drawn_lines import DrawnReply
from tui.typed import TypingApp
from tui.widgets.chat_message import PastReply

FRAME = 1 / 30
"""Seconds between draws of a streaming reply, at the least.

A frame that took longer to reach the screen is followed by an idle gap as
long as it took, so drawing never holds the UI loop more than half the time
and keystrokes get the rest.
"""
TYPING_FRAME = 0.1
"""Seconds a frame may be held back while keys arrive: a reply being streamed while the
user types draws about this often, so a key's echo mostly finds the loop free (bench/tui.py
measures the keystroke latency this buys)."""
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


class _StreamLines:
    """A streaming reply's rendered lines at one width and style."""

    def __init__(self) -> None:
        self.reset(0, None)

    def reset(self, width: int, style: VisualStyle | None) -> None:
        self.width = width
        self.style = style
        self.frozen: list[Strip] = []
        """The frozen runs' lines, a blank line between runs."""
        self.runs = 0
        """Frozen runs rendered into `frozen`."""
        self.tail: list[Strip] | None = None
        """The open tail's lines; None: the frame changed it, render it again."""
        self.all: list[Strip] | None = None


class AssistantMessage(PastReply):
    app = getters.app(TypingApp)
    """The app, which says when the last key arrived (`typed_at`)."""

    def __init__(self, text: str = "", *, seq: int | None = None) -> None:
        self._parts: list[str] = []
        super().__init__(text, seq=seq)
        self._safe = SafeStream()
        self._pending: list[str] = []
        """Text written since the last frame was drawn."""
        self._runs: list[str] = []
        """Frozen runs of finished blocks, in order; each is rendered once per width."""
        self._open = ""
        """The text of the open tail: the blocks not frozen yet."""
        self._open_source: RichMarkdown | None = None
        """The open tail parsed by the last frame (rendered at most once per frame)."""
        self._lines = _StreamLines()
        self._streaming = False
        """Frames draw the reply (from `_lines`), not the log's text yet."""
        self._frame: Timer | None = None
        self._busy = False
        """A frame is being drawn and has not reached the screen yet."""
        self._due = 0.0
        """When the frame held back for typing first fell due (0: none is held)."""
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
        """The text the widget draws now: its frames while streaming, then the log's text."""
        if not self._streaming:
            return self.text
        return "".join(self._runs) + self._open

    @property
    def frozen_runs(self) -> int:
        """Runs of finished blocks frozen so far (none once the reply is finished)."""
        return len(self._runs) if self._streaming else 0

    @property
    def open_text(self) -> str:
        """The open tail that each frame parses and renders again."""
        return self._open if self._streaming else ""

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
        held = self._held_for_keys(started)
        if held:
            self._frame = self.set_timer(held, self._draw, name="reply frame")
            return
        self._show_pending()
        self._busy = True
        if not self.call_after_refresh(self._drawn, started):
            self._drawn(started)

    def _held_for_keys(self, now: float) -> float:
        """Seconds this frame waits so that keys go first (0: draw now).

        While keys arrive (the app's `typed_at`, one within `TYPING_FRAME`), a
        frame waits until `TYPING_FRAME` after the last key, but never longer
        than `TYPING_FRAME` after it first fell due: a typist gets a loop with
        far fewer frames in it, and the reply still moves several times a second.
        """
        typed = now - self.app.typed_at
        if typed >= TYPING_FRAME:
            self._due = 0.0
            return 0.0
        due = self._due = self._due or now
        wait = min(TYPING_FRAME - typed, due + TYPING_FRAME - now)
        if wait <= 0.002:
            self._due = 0.0
            return 0.0
        return wait

    def _show_pending(self) -> None:
        """Take what was written since the last frame: freeze finished blocks, reparse the tail.

        Nothing is rendered here: the layout that follows measures the reply
        by rendering what changed, and drawing reuses those lines.
        """
        text = self._open + "".join(self._pending)
        self._pending.clear()
        source = RichMarkdown(text)
        split = split_open_block(source, text)
        if split >= FREEZE_CHARS:
            self._runs.append(text[:split])
            text = text[split:]
            source = RichMarkdown(text)
        self._open = text
        self._open_source = source
        self._lines.tail = None
        self._streaming = True
        self.refresh(layout=True)

    def _stream_lines(self, width: int) -> list[Strip]:
        """The streamed reply as lines at `width`: frozen runs rendered once, the tail once
        per frame; a new width or style renders the runs again."""
        lines = self._lines
        style = self.visual_style
        if width != lines.width or style != lines.style:
            lines.reset(width, style)
        for run in self._runs[lines.runs :]:
            if lines.frozen:
                lines.frozen.append(Strip.blank(width, style.rich_style))
            lines.frozen.extend(self._render_markdown(RichMarkdown(run), width, style))
            lines.runs += 1
            lines.all = None
        if lines.tail is None:
            source = self._open_source or RichMarkdown(self._open)
            lines.tail = self._render_markdown(source, width, style)
            lines.all = None
        if lines.all is None:
            gap = [Strip.blank(width, style.rich_style)] if lines.frozen and lines.tail else []
            lines.all = lines.frozen + gap + lines.tail
        return lines.all

    def _render_markdown(self, source: RichMarkdown, width: int, style: VisualStyle) -> list[Strip]:
        return Visual.to_strips(self, visualize(self, source), width, None, style)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if not self._streaming:
            return super().get_content_height(container, viewport, width)
        return len(self._stream_lines(width)) if width else 0

    def to_keep(self) -> DrawnReply | None:
        """Kept for the next open only once finished: the lines streamed are not the reply."""
        if self._streaming or not self._finished:
            return None
        return super().to_keep()

    def render_line(self, y: int) -> Strip:
        if not self._streaming:
            return super().render_line(y)
        width = self.size.width
        lines = self._stream_lines(width)
        return lines[y] if 0 <= y < len(lines) else Strip.blank(width)

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        # The layout that resized this widget has placed it already: setting its virtual
        # size as a layout reactive would only ask for a second, identical layout.
        return super()._size_updated(size, virtual_size, container_size, layout=False)

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
        any frame showed it. Then, after that frame, the streamed lines give
        way to one render of the log's text (a torn or cleaned-up reply goes
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
        # The whole reply is parsed and rendered once more, off the loop: a long one
        # takes tens of milliseconds, and the streamed lines stay on screen meanwhile.
        width, style = self.size.width, self.visual_style
        rendered = None
        if self.is_mounted and width:
            with contextlib.suppress(Exception):  # the loop renders it then, as any reply
                rendered = await asyncio.to_thread(_render_whole, self, text, width, style)
        source, lines = rendered if rendered is not None else (RichMarkdown(text), None)
        self.text = text
        self._runs.clear()
        self._open = ""
        self._open_source = None
        self._streaming = False
        self._lines = _StreamLines()
        self.update(source)
        if lines is not None and self.size.width == width and self.visual_style == style:
            self.plain_code = False
            self._drawn_lines = (self._key(width), lines)
        if cancelled:
            self.add_class("-cancelled")
        if interrupted:
            self.add_class("-interrupted")


def _render_whole(
    reply: AssistantMessage, text: str, width: int, style: VisualStyle
) -> tuple[RichMarkdown, list[Strip]]:
    """A finished reply parsed and rendered as `PastReply` draws it, in a worker thread.

    Only reads the widget (its app's console); the loop installs the lines if
    the width and style they were made for still hold.
    """
    source = RichMarkdown(text)
    return source, Visual.to_strips(reply, visualize(reply, source), width, None, style)
