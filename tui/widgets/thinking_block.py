"""A reasoning model's thinking, above its reply: one line until expanded.

Collapsed, the block is its title: `▶ thinking… 1,234 chars · 5s` while the
thinking streams (the clock stops when the answer begins or the turn ends),
then `▶ thought for 5.2s (1,234 chars)`. While collapsed, a delta only joins
a list and counts its characters, and a frame repaints that one line: the
hidden text is never parsed or drawn, however long it grows. Enter or a click
on the title expands it. While it streams, the text is then drawn by the
streamed reply's rows (tui.live), so a frame costs about the text it adds;
once finished it is rendered whole, once per width and style, as a replayed
reply is. The text is the model's: everything shown is made safe.

One widget drawing its own lines, as a tool block is: a resumed thread of
reasoning replies mounts one widget per thinking, and no Markdown parser is
loaded for a block nobody opens.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from textual import events
from textual.binding import Binding
from textual.content import Content
from textual.geometry import Size
from textual.reactive import reactive
from textual.strip import Strip
from textual.timer import Timer
from textual.visual import Visual, visualize
from textual.widget import Widget

from engine.util.safe_text import SafeStream, safe_text
from engine.util.thought import thought_line
from tui import code_lexers
from tui.widgets.placed_once import PlacedOnce

if TYPE_CHECKING:
    from rich.console import ConsoleRenderable

    from tui.live.reply import LiveReply

FRAME = 1 / 30
"""Seconds between two repaints of a streaming block, at the least."""
TICK = 1.0
"""Seconds between two repaints of the clock while the model thinks."""
INDENT = 2
"""Cells the expanded text is set in from the title's arrow."""

_COLLAPSED, _EXPANDED = "▶", "▼"


class ThinkingBlock(PlacedOnce, Widget, can_focus=True):
    DEFAULT_CSS = """
    ThinkingBlock {
        width: 1fr;
        height: auto;
        color: $text-muted;
        pointer: pointer;
    }
    ThinkingBlock > .thinking-block--title { text-style: italic; }
    ThinkingBlock:hover > .thinking-block--title { background: $block-hover-background; }
    ThinkingBlock:focus > .thinking-block--title {
        text-style: $block-cursor-text-style;
        background: $block-cursor-background;
        color: $block-cursor-foreground;
    }
    """
    COMPONENT_CLASSES = {"thinking-block--title"}
    BINDINGS = [
        Binding(
            "enter",
            "toggle_block",
            "Toggle",
            show=False,
            tooltip="on a thinking block: show or hide the model's thinking",
        )
    ]

    collapsed: reactive[bool] = reactive(True, layout=True)
    """The title alone, or the title and the thinking in full."""

    def __init__(self, text: str = "", *, seconds: float | None = None, live: bool = False) -> None:
        super().__init__()
        self._parts = [safe_text(text)] if text else []
        self._chars = len(text)
        """The thinking's length as the model sent it (the figure the log and exports give)."""
        self._safe = SafeStream()
        self._seconds = seconds
        self.streaming = live
        """Deltas still arrive (the log does not hold the thinking yet)."""
        self._began = time.monotonic()
        self._ended: float | None = None
        """When the answer began (the clock stopped) while the block still streams."""
        self._live: LiveReply | None = None
        """The text's rows while it streams, made on the first expansion."""
        self._whole: tuple[tuple[Any, ...], list[Strip]] | None = None
        """The finished text's rows and what they were drawn for."""
        self._title: tuple[tuple[Any, ...], Strip] | None = None
        self._frame: Timer | None = None
        self._clock: Timer | None = None
        self._building: set[str] = set()

    @property
    def text(self) -> str:
        """The thinking so far (safe); joined on demand, a delta must not copy it."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @property
    def chars(self) -> int:
        return self._chars

    def on_mount(self) -> None:
        if self.streaming and self._ended is None:
            self._clock = self.set_interval(TICK, self.refresh, name="thinking clock")

    # -- the stream -------------------------------------------------------------------

    def write(self, fragment: str) -> None:
        """Called per delta; returns at once: the next frame shows it."""
        if not self.streaming:
            return
        self._chars += len(fragment)
        fragment = self._safe.feed(fragment)
        if fragment:
            self._parts.append(fragment)
            if self._live is not None:
                self._live.feed(fragment)  # read only when the expanded block is drawn
        if self._frame is None:
            self._frame = self.set_timer(FRAME, self._draw, name="thinking frame")

    def _draw(self) -> None:
        self._frame = None
        self.refresh(layout=not self.collapsed)

    def stop(self) -> None:
        """The answer began (or the turn ended): the clock stops."""
        if self._ended is None:
            self._ended = time.monotonic()
        if self._clock is not None:
            self._clock.stop()
            self._clock = None
        self.refresh()

    def finish(self, text: str, seconds: float | None) -> None:
        """The log holds the thinking: its text and time win over what streamed."""
        self.stop()
        if self._frame is not None:
            self._frame.stop()
            self._frame = None
        if seconds is None and self.streaming:
            seconds = self.elapsed  # the log has no time: the one this block measured
        self._seconds = seconds
        self._parts = [safe_text(text)] if text else []
        self._chars = len(text)
        self.streaming = False
        self._live = None
        self._whole = None
        self.refresh(layout=True)

    @property
    def elapsed(self) -> float | None:
        """How long it has thought, or thought (None: a finished thinking whose time the
        log does not have)."""
        if not self.streaming:
            return self._seconds
        ended = self._ended if self._ended is not None else time.monotonic()
        return ended - self._began

    # -- keys and the mouse ------------------------------------------------------------

    def focus_title(self) -> None:
        self.focus()

    def action_toggle_block(self) -> None:
        self.collapsed = not self.collapsed

    def on_click(self, event: events.Click) -> None:
        if event.y == 0:  # the title line, as a tool block's
            event.stop()
            self.focus()
            self.action_toggle_block()

    def on_focus(self, event: events.Focus) -> None:
        self.refresh()

    def on_blur(self, event: events.Blur) -> None:
        self.refresh()

    # -- drawing -------------------------------------------------------------------------

    def title(self) -> str:
        """The title line's words: how long and how much it thought (so far)."""
        elapsed = self.elapsed
        if self.streaming and self._ended is None and elapsed is not None:
            return f"thinking… {self._chars:,} chars · {int(elapsed)}s"
        return thought_line(self._chars, elapsed)

    def _title_at(self, width: int) -> Strip:
        arrow = _COLLAPSED if self.collapsed else _EXPANDED
        words = f"{arrow} {self.title()}"
        style = self.get_visual_style("thinking-block--title")
        base = self.visual_style
        key = (width, words, style, base)
        if self._title is None or self._title[0] != key:
            strips = Visual.to_strips(self, Content.styled(words, style), width, 1, base)
            self._title = (key, strips[0].extend_cell_length(width, base.rich_style))
        return self._title[1]

    def _body_height(self, width: int) -> int:
        if self.collapsed or width <= INDENT:
            return 0
        if self.streaming:
            return self._live_at(width - INDENT).height
        return len(self._whole_at(width - INDENT))

    def _body_row(self, y: int, width: int) -> Strip:
        inner = width - INDENT
        if self.streaming:
            return self._live_at(inner).row(y)
        rows = self._whole_at(inner)
        return rows[y] if 0 <= y < len(rows) else Strip.blank(inner)

    def _live_at(self, width: int) -> LiveReply:
        """The streamed rows at `width` and the current style, with the new text read."""
        from tui.live.markdown import Draw
        from tui.live.reply import LiveReply

        style = self.visual_style
        live = self._live
        if live is None:
            live = self._live = LiveReply(Draw(width, self._renderer(width), style))
            live.feed(self.text)
        elif live.draw.width != width or live.draw.key != style:
            live.resize(Draw(width, self._renderer(width), style))
        if live.update():
            wanted = live.wanted - self._building
            if wanted:
                self._building |= wanted
                self.run_worker(self._build_lexers(wanted), exit_on_error=False)
        return live

    async def _build_lexers(self, names: set[str]) -> None:
        await asyncio.to_thread(code_lexers.build, names)
        if self._live is not None:
            self._live.lexers_built()
            self.refresh(layout=True)

    def _renderer(self, width: int) -> Any:
        style = self.visual_style

        def render(renderable: ConsoleRenderable) -> list[Strip]:
            return Visual.to_strips(self, visualize(self, renderable), width, None, style)

        return render

    def _whole_at(self, width: int) -> list[Strip]:
        """The finished text rendered once per width, style and lexers built."""
        key = (width, self.visual_style, code_lexers.generation)
        if self._whole is None or self._whole[0] != key:
            from tui.widgets.replayed_markdown import ReplayedMarkdown

            markdown = ReplayedMarkdown(self.text)
            rows = Visual.to_strips(self, visualize(self, markdown), width, None, self.visual_style)
            self._whole = (key, rows)
        return self._whole[1]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return 1 + self._body_height(width) if width else 1

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        style = self.visual_style.rich_style
        if not width:
            return Strip.blank(width)
        if y == 0:
            return self._title_at(width)
        if self.collapsed or width <= INDENT:
            return Strip.blank(width, style)
        row = self._body_row(y - 1, width)
        return Strip.join([Strip.blank(INDENT, style), row]).extend_cell_length(width, style)
