"""The reply being streamed: drawn at a frame rate from kept rows, one widget throughout.

However fast the model, the UI loop draws at most one frame per `FRAME`
(while the user types, about one a key, after its echo): a delta only joins a list
and, if none is armed, arms the frame's timer. A frame reads the text
written since the last one into the reply's rows (tui.live): finished
blocks are drawn once and kept, a code block's lines are lexed and drawn
about once each, a long paragraph's rows are kept once they cannot change,
so a frame costs about the text it adds, however long the reply (a code
block's new lines are lexed off the loop and shown a frame later), and only
the rows that text changed are drawn again (Textual keeps the others). The
widget's height is a count of rows, no child is ever mounted, and a row is
drawn when it is shown. A language whose Pygments lexer is not built yet is
drawn plain until a worker thread has built it. Once the log holds the
reply, it shows the log's text rendered exactly as a reply replayed from the
log (`PastReply`) is, so live and resumed replies look the same; that one
render of the whole text runs in a worker thread while the streamed rows
stay on screen, so a long reply's end does not hold the loop.

Imported on the first reply, not at launch. The text shown (and copied) is
the reply made terminal-safe; an escape sequence split across deltas is held
back until it is whole, then dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from functools import partial
from typing import TYPE_CHECKING

from rich.markdown import Markdown as RichMarkdown
from textual import getters
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.timer import Timer
from textual.visual import Visual, visualize

if TYPE_CHECKING:
    from rich.console import ConsoleRenderable

from engine.util.safe_text import SafeStream, safe_text
from tui import code_lexers
from tui.drawn_lines import DrawnReply
from tui.live import collection
from tui.live.lexing import OffLoop
from tui.live.markdown import Draw, Render
from tui.live.reply import FREEZE_CHARS, LiveReply
from tui.typed import TypingApp
from tui.widgets.chat_message import PastReply

__all__ = ["FREEZE_CHARS", "AssistantMessage"]

FRAME = 1 / 30
"""Seconds between draws of a streaming reply, at the least.

A frame that took longer to reach the screen is followed by an idle gap as
long as it took, so drawing holds the UI loop at most half the time and
keystrokes get the rest. Text that gathers faster is read meanwhile, a slice a
turn (`FRAME_CHARS`), and drawn by the next frame.
"""
TYPING = 0.5
"""Seconds after a key during which the user counts as typing: a reply's frames are then
drawn just after a key's echo, so the next key mostly finds the loop free
(`bench/tmux_stream.py` and `bench/tui.py` measure the echo this buys)."""
AFTER_KEY = 0.04
"""Seconds after a key, its echo drawn, in which a frame due is drawn at once: the next
key is most likely further off than that."""
HOLD = 0.25
"""Seconds a frame may be held back for keys, at most: the reply moves several times a
second however the user types."""
ECHO_GAP = 0.004
"""Seconds between a key's echo and the frame held for it: the echo's bytes go out first
(Textual's output thread needs the interpreter's lock the frame would hold)."""
FRAME_CHARS = 2000
"""Characters read in one turn of the loop at most. Behind a fast stream the text waiting
is read a slice a turn (keys echo between), without drawing; the next frame draws what
was read: reading keeps up with the stream, and the screen is drawn at the frame rate
(a frame that scrolls the transcript draws every row of it)."""
NOW = 0.001
"""Seconds before a frame or a slice that is due at once."""
FRAME_WAIT = 1.0
"""Seconds the end waits, at most, for the frame showing the whole streamed text."""
ROWS_A_TURN = 256
"""Rows of a finished reply taken per turn of the loop when its streamed rows are kept."""
SPARE_ROWS = 4
"""Rows past the reply's end repainted with the rows that changed (its bottom padding
moves as it grows)."""
LEXERS = "building-lexers"
"""Worker group that builds the lexers of languages the reply draws plain meanwhile."""


class AssistantMessage(PastReply):
    app = getters.app(TypingApp)
    """The app, which says when the last key arrived (`typed_at`)."""

    def __init__(self, text: str = "", *, seq: int | None = None) -> None:
        self._parts: list[str] = []
        super().__init__(text, seq=seq)
        self._safe = SafeStream()
        self._pending: deque[str] = deque()
        """Text written and not read by a frame yet (from `_cut` on in the first piece)."""
        self._cut = 0
        self._pending_chars = 0
        self._live: LiveReply | None = None
        """The streamed rows (tui.live), at the width and style they were drawn for."""
        self._streaming = False
        """Frames draw the reply (from `_live`), not the log's text yet."""
        self._frame: Timer | None = None
        self._reading: Timer | None = None
        """The turn that reads the next slice of the text waiting, without drawing."""
        self._shown_height = 0
        """The streamed rows' height when a frame last asked for a draw."""
        self._busy = False
        """A frame is being drawn and has not reached the screen yet."""
        self._due = 0.0
        """When the frame held back for typing first fell due (0: none is held)."""
        self._held = False
        """The armed frame is one held back for keys."""
        self._building: set[str] = set()
        """Languages whose lexers a worker is building."""
        self._streamed = False
        self._finished = False
        self._holding = False
        """This reply holds full collections off (tui.live.collection) while it streams."""
        self._repaint: Region | None = None
        """The rows the last read changed, marked dirty (in content coordinates)."""
        self._relexed = False
        """Code was lexed off the loop since the last frame read the reply."""

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
        if not self._streaming or self._live is None:
            return self.text
        return self._live.text

    @property
    def frozen_runs(self) -> int:
        """Parts of the reply kept so far (none once the reply is finished)."""
        return len(self._live.parts) if self._streaming and self._live is not None else 0

    @property
    def open_text(self) -> str:
        """The text each frame reads again: the open tail, or the block being streamed."""
        return self._live.open_text if self._streaming and self._live is not None else ""

    def write(self, fragment: str) -> None:
        """Called per delta; returns at once: the next frame draws it."""
        fragment = self._safe.feed(fragment)
        if not fragment or self._finished:
            return
        self._parts.append(fragment)
        self._pending.append(fragment)
        self._pending_chars += len(fragment)
        self._streamed = True
        if not self._holding:
            self._holding = True
            collection.hold_full()
        if self._frame is None and not self._busy:
            self._frame = self.set_timer(FRAME, self._draw, name="reply frame")
        if self._pending_chars >= FRAME_CHARS and self._reading is None:
            # Not 0: a Textual timer of 0 seconds never fires (it divides by its interval).
            self._reading = self.set_timer(NOW, self._read_ahead, name="reply reading")

    def _lexed(self) -> None:
        """Code was lexed off the loop since the last frame: the next frame shows it."""
        if self._finished or not self.is_mounted:
            return
        self._relexed = True
        if self._frame is None and not self._busy:
            self._frame = self.set_timer(FRAME, self._draw, name="reply frame")

    @property
    def lexing(self) -> bool:
        """Code written is being lexed off the loop, or lexed and not drawn yet."""
        live = self._live
        return self._relexed or (self._streaming and live is not None and live.lexing)

    def _draw(self, *, for_keys: bool = True) -> None:
        """The frame's timer: draw what waits, unless it is held back for keys (`for_keys`:
        not once a key's echo let it go)."""
        self._frame = None
        due = self._pending or self._relexed
        if self._finished or not due or self._busy or not self.is_mounted:
            return
        started = time.monotonic()
        held = self._held_for_keys(started) if for_keys else 0.0
        self._held = bool(held)
        if held:
            self._frame = self.set_timer(held, self._draw, name="reply frame")
            self.app.after_echo(self._after_echo)
            return
        self._show_pending()
        self._busy = True
        if not self.call_after_refresh(self._drawn, started):
            self._drawn(started)

    def _after_echo(self) -> None:
        """A key's echo was drawn while this frame was held back for keys: it is drawn at
        the next turn, before the next key most likely comes, not as that key arrives."""
        if not self._held or self._frame is None or self._finished or not self.is_mounted:
            return
        self._frame.stop()
        self._held = False
        self._due = 0.0
        draw = partial(self._draw, for_keys=False)
        self._frame = self.set_timer(ECHO_GAP, draw, name="reply frame")

    def _held_for_keys(self, now: float) -> float:
        """Seconds this frame waits so that keys go first (0: draw now).

        While the user types (a key within `TYPING`, the app's `typed_at`), a
        frame is drawn at once only in the `AFTER_KEY` after a key whose echo
        is drawn; otherwise it waits for the next key's echo (`_after_echo`),
        never longer than `HOLD` after it first fell due: a typist gets about
        a frame a key, drawn where the next key is furthest off. The text
        gathered meanwhile is read as it comes (`_read_ahead`).
        """
        app = self.app
        typed = now - app.typed_at
        due = self._due or now
        just_echoed = 0 <= typed < AFTER_KEY and app.echoed_at >= app.typed_at
        wait = min(TYPING - typed, due + HOLD - now)
        if typed >= TYPING or just_echoed or wait <= 0.002:
            self._due = 0.0
            return 0.0
        self._due = due
        return wait

    def _show_pending(self) -> None:
        """Hand what waits (`FRAME_CHARS` of it at most) to the streamed rows and draw the
        rows changed since the last frame: those this read changed and those read ahead.

        At the width the reply has, the text is read now and only the rows it
        changed are repainted (and the layout asked for if the height moved);
        before the first layout, the layout reads it.
        """
        live = self._live
        if live is None:
            lexing = OffLoop(asyncio.get_running_loop(), self._lexed)
            live = self._live = LiveReply(Draw(0, lambda renderable: []), lexing)
        live.feed(self._take_slice())
        self._relexed = False
        self._streaming = True
        width = self.size.width
        if not width or live.draw.width != width:
            self.refresh(layout=True)
            return
        self._live_at(width)
        rows, self._repaint = self._repaint, None
        layout = live.height != self._shown_height
        self._shown_height = live.height
        if rows is not None or layout:
            self.refresh(*(() if rows is None else (rows,)), layout=layout)

    def _read_ahead(self) -> None:
        """While a slice's worth waits, read it without drawing (the next frame draws it),
        and read on at the next turn."""
        self._reading = None
        if self._finished or self._pending_chars < FRAME_CHARS or not self._read_slice():
            return
        if self._pending_chars >= FRAME_CHARS:
            self._reading = self.set_timer(NOW, self._read_ahead, name="reply reading")

    def _read_slice(self) -> bool:
        """Read the next slice of the text waiting into the streamed rows; the rows it
        changed wait in `_repaint` for the next frame. False: not read, the rows are not
        laid out at this width yet (a frame's layout reads it)."""
        live, width = self._live, self.size.width
        if live is None or not width or live.draw.width != width or not self.is_mounted:
            return False
        live.feed(self._take_slice())
        self._live_at(width)
        return True

    def _take_slice(self) -> str:
        """The next `FRAME_CHARS` of the text waiting (a slice costs its own length, however
        much waits behind it)."""
        pending, taken, size = self._pending, [], 0
        while pending and size < FRAME_CHARS:
            piece, start = pending[0], self._cut
            end = min(len(piece), start + FRAME_CHARS - size)
            taken.append(piece[start:end] if start or end < len(piece) else piece)
            size += end - start
            if end == len(piece):
                pending.popleft()
                self._cut = 0
            else:
                self._cut = end
        self._pending_chars -= size
        return "".join(taken)

    def _live_at(self, width: int, *, read: bool = True) -> LiveReply:
        """The streamed rows at `width` and the current style, with the new text and
        lexed code read (`read`: a frame or a layout; drawing a row reads none, so the
        height moves only with the layout)."""
        live = self._live
        assert live is not None
        style = self.visual_style
        height = live.height
        changed = live.draw.width != width or live.draw.key != style
        if changed:
            live.resize(Draw(width, self._renderer(width, style), style))
        if (read and live.update()) or changed:
            wanted = live.wanted - self._building
            if wanted:
                self._building |= wanted
                self.run_worker(self._build_lexers(wanted), group=LEXERS, exit_on_error=False)
            self._mark_rows(live, height)
        return live

    def _mark_rows(self, live: LiveReply, height: int) -> None:
        """Mark the rows the last read changed dirty, so only they are drawn again (the
        others stay in Textual's cache of this widget's lines)."""
        first = live.take_changed()
        if first is None:
            return
        end = max(height, live.height) + SPARE_ROWS
        rows = Region(0, first, max(live.draw.width, self.outer_size.width), end - first)
        self._set_dirty(rows)
        self._repaint = rows if self._repaint is None else self._repaint.union(rows)

    def _renderer(self, width: int, style: VisualStyle) -> Render:
        def render(renderable: ConsoleRenderable) -> list[Strip]:
            return Visual.to_strips(self, visualize(self, renderable), width, None, style)

        return render

    async def _build_lexers(self, names: set[str]) -> None:
        """Build these languages' lexers off the loop, then draw their blocks again."""
        await asyncio.to_thread(code_lexers.build, names)
        if self._live is not None and self._streaming:
            self._live.lexers_built()
            self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if not self._streaming:
            return super().get_content_height(container, viewport, width)
        self._shown_height = self._live_at(width).height if width else 0
        return self._shown_height

    def to_keep(self) -> DrawnReply | None:
        """Kept for the next open only once finished: the lines streamed are not the reply."""
        if self._streaming or not self._finished:
            return None
        return super().to_keep()

    def render_line(self, y: int) -> Strip:
        if not self._streaming:
            return super().render_line(y)
        width = self.size.width
        if not width:
            return Strip.blank(width)
        return self._live_at(width, read=False).row(y)

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        if self._streaming and self._live is not None and size.width == self._size.width:
            # A new height alone: the rows the new text changed were marked dirty as they
            # were read (`_mark_rows`); the rest of the widget's lines stay cached.
            self._size = size
        return super()._size_updated(size, virtual_size, container_size, layout)  # PlacedOnce

    def _drawn(self, started: float) -> None:
        """The frame is on screen: the next one waits at least as long as this one took."""
        self._busy = False
        if (self._pending or self._relexed) and not self._finished and self._frame is None:
            cost = time.monotonic() - started
            self._frame = self.set_timer(max(FRAME, cost), self._draw, name="reply frame")

    def _release(self) -> None:
        if self._holding:
            self._holding = False
            collection.release_full()

    def on_unmount(self) -> None:
        """Removed while streaming (a pruned or cleared transcript): its hold ends too."""
        self._release()

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
        drawn first, so the whole reply is on screen at the cost of the text
        not read yet; the reply may end in the same tick as its last delta,
        before any frame showed it. After that frame the streamed rows stay as
        the reply's lines when they are those lines (`_streamed_lines`); else
        they give way to one render of the log's text, off the loop (a torn or
        cleaned-up reply goes straight to it).
        """
        text = safe_text(text)
        self._finished = True
        for timer in (self._frame, self._reading):
            if timer is not None:
                timer.stop()
        self._frame = self._reading = None
        if self._streamed and text == self.text and self.is_mounted:
            while self._pending_chars > FRAME_CHARS and self.is_mounted:
                # Text the frames had not read yet: a slice a turn, keys echo between.
                if self._read_slice():
                    await asyncio.sleep(0)
                else:  # not laid out yet: a frame lays it out
                    self._show_pending()
                    await self._next_frame()
            # The last frame shows every line, lexed now (a reply that ends before its
            # first frame has no job out: its code is lexed on this turn from the start).
            if self._live is None:
                self._live = LiveReply(Draw(0, lambda renderable: []))
            else:
                self._live.lex_now()
            self._show_pending()
            await self._next_frame()
        width, style = self.size.width, self.visual_style
        streamed = await self._streamed_lines(text, width, style)
        if streamed is not None:
            self._streaming = False
            self._live = None
            self.show_drawn(text, streamed)
            self._ended(cancelled, interrupted)
            return
        # The whole reply is parsed and rendered once more, off the loop: a long one
        # takes tens of milliseconds, and the streamed rows stay on screen meanwhile.
        rendered = None
        if self.is_mounted and width:
            with contextlib.suppress(Exception):  # the loop renders it then, as any reply
                rendered = await asyncio.to_thread(_render_whole, self, text, width, style)
        source, lines = rendered if rendered is not None else (RichMarkdown(text), None)
        self.text = text
        self._streaming = False
        self._live = None
        self.update(source)
        if lines is not None and self.size.width == width and self.visual_style == style:
            self.plain_code = False
            self._drawn_lines = (self._key(width), lines)
        self._ended(cancelled, interrupted)

    async def _streamed_lines(
        self, text: str, width: int, style: VisualStyle
    ) -> list[Strip] | None:
        """The streamed rows as the finished reply's lines, when they are those lines: the
        text streamed is the log's, every line of it read, at this width and style, and
        every code block lexed with its language's lexer (a part's rows are the rows Rich
        draws for the whole reply, tui.live). None: render the whole reply again.

        A long reply's rows are taken a slice per turn of the loop (a code block's rows
        are composed as they are taken), so keys pressed meanwhile echo."""
        live = self._live
        if live is None or not self._streaming or not width or not self.is_mounted:
            return None
        if live.draw.width != width or live.draw.key != style or live.text != text:
            return None
        live = self._live_at(width)
        if live.lexing or live.wanted or live.stale:
            return None
        height = live.height
        lines: list[Strip] = []
        for start in range(0, height, ROWS_A_TURN):
            if start:
                await asyncio.sleep(0)
                if self._live is not live or not self.is_mounted:
                    return None
                if (self.size.width, self.visual_style, live.height) != (width, style, height):
                    return None
            lines.extend(live.row(y) for y in range(start, min(start + ROWS_A_TURN, height)))
        return lines

    def _ended(self, cancelled: bool, interrupted: bool) -> None:
        if cancelled:
            self.add_class("-cancelled")
        if interrupted:
            self.add_class("-interrupted")
        self._release()  # once its final rows are in: a full collection may follow


def _render_whole(
    reply: AssistantMessage, text: str, width: int, style: VisualStyle
) -> tuple[RichMarkdown, list[Strip]]:
    """A finished reply parsed and rendered as `PastReply` draws it, in a worker thread.

    Only reads the widget (its app's console); the loop installs the lines if
    the width and style they were made for still hold.
    """
    source = RichMarkdown(text)
    return source, Visual.to_strips(reply, visualize(reply, source), width, None, style)
