"""One widget per message in the transcript (the streamed reply has its own module).

Nothing here imports a Markdown parser at module level: a new thread opens
without paying for one until the first reply arrives. Every text is shown
through `safe_text`: Rich and Textual pass ESC and C1 controls to the terminal.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from textual.content import Content
from textual.geometry import Size
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widgets import Static

from engine.util.safe_text import safe_text
from tui import code_lexers, drawn_lines
from tui.widgets.placed_once import PlacedOnce

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, ConsoleRenderable


class UserMessage(PlacedOnce, Static):
    DEFAULT_CSS = """
    UserMessage {
        background: $boost;
        border-left: outer $primary;
    }
    UserMessage.-steer { border-left: outer $warning; }
    UserMessage.-injected { border-left: outer $secondary; color: $text-muted; }
    """

    def __init__(self, text: str, *, seq: int, label: str = "") -> None:
        self.text = safe_text(text)
        self.seq = seq
        super().__init__(self._body(label))

    def _body(self, label: str) -> Content:
        body = Content(self.text)
        if label:
            body = Content.assemble((label + " ", "$text-muted italic"), body)
        return body

    def rebind(self, text: str, *, seq: int, label: str = "") -> None:
        """Show another message, as if built for it (the transcript recycles a widget its
        window let go of: tui.widgets.spares)."""
        self.text = safe_text(text)
        self.seq = seq
        self.update(self._body(label))


FOLD_LINES = 500
"""The longest reply whose lines are folded out of view: unfolding makes each line a
Strip again, on the loop, as the reply comes into view."""


class PastReply(PlacedOnce, Static):
    """A reply replayed from the log: one widget, rendered once.

    A Markdown widget builds a child per block, which is right for the reply
    being streamed but costs hundreds of KB per message when a long thread is
    scrolled back; a finished reply only needs to be drawn.
    """

    DEFAULT_CSS = """
    PastReply.-cancelled { border-left: outer $warning; }
    PastReply.-interrupted { border-left: outer $error; }
    """

    def __init__(
        self, text: str, *, seq: int | None = None, drawn: drawn_lines.DrawnReply | None = None
    ) -> None:
        text = safe_text(text)
        super().__init__(_ReplyMarkdown(text))
        self._bind(text, seq, drawn)

    def _bind(self, text: str, seq: int | None, drawn: drawn_lines.DrawnReply | None) -> None:
        self.text = text
        self.seq = seq
        self._drawn_lines: tuple[Any, list[Strip]] | None = None
        """The reply's lines and what they were rendered for (see `_reply_lines`)."""
        if drawn is not None and drawn.digest != drawn_lines.digest(text):
            drawn = None
        self._kept = drawn
        """Its lines as the last session drew them (tui.drawn_lines), until they are used
        or no longer fit."""
        self._folded: tuple[Any, int, tuple[tuple[drawn_lines.Segment, ...], ...]] | None = None
        """Its lines while out of view (`fold_lines`): what they were rendered for, how
        many, and their text and styles as plain tuples."""
        self.plain_code = False
        """Whether its lines hold a code block drawn plain while its lexer was being
        built (tui.code_lexers): they are drawn again once it is."""

    def rebind(
        self, text: str, *, seq: int | None = None, drawn: drawn_lines.DrawnReply | None = None
    ) -> None:
        """Show another reply, as if built for it (the transcript recycles a widget its
        window let go of: tui.widgets.spares)."""
        text = safe_text(text)
        self._bind(text, seq, drawn)
        self.update(_ReplyMarkdown(text))

    def show_drawn(self, text: str, lines: list[Strip]) -> None:
        """Show `text`, whose lines at the current width and style are `lines`, drawn
        already: its Markdown is parsed only if it must be drawn again (another width)."""
        self.text = text
        self.update(_ReplyMarkdown(text))
        self.plain_code = False
        self._drawn_lines = (self._key(self.size.width), lines)

    def _key(self, width: int) -> tuple[Any, ...]:
        code = code_lexers.generation if self.plain_code else -1
        style = self.visual_style
        return (width, style, self.visual, self.highlight_link_id, self.screen._selecting, code)

    def _reply_lines(self, width: int) -> list[Strip] | None:
        """The reply rendered once per width, style and content, for both the layout's
        measure and the drawing (Textual renders a Rich renderable for each).

        None while text is selected with the mouse: the selection is drawn into the
        lines, so Textual's own path renders them.
        """
        if self.text_selection is not None:
            return None
        cached = self._drawn_lines
        key = self._key(width)
        if cached is not None and cached[0] == key:
            return cached[1]
        folded, self._folded = self._folded, None
        if folded is not None and folded[0] == key:
            unfolded = drawn_lines.decode_lines(folded[2])
            if unfolded is not None:
                self._drawn_lines = (key, unfolded)
                return unfolded
        kept = self._kept_lines(width)
        if kept is not None:
            self._drawn_lines = (self._key(width), kept)
            return kept
        plain_before = code_lexers.plain_drawn
        lines = Visual.to_strips(self, self.visual, width, None, self.visual_style)
        self.plain_code = code_lexers.plain_drawn != plain_before
        self._drawn_lines = (self._key(width), lines)
        return lines

    def _kept_lines(self, width: int) -> list[Strip] | None:
        """The lines kept from the last session, if they were drawn for this width and style
        with nothing highlighted (then used once: from there on they are the drawn lines)."""
        kept = self._kept
        if kept is None or kept.width != width or self.highlight_link_id:
            return None
        if kept.style != drawn_lines.style_key(self.app.theme, self.visual_style):
            return None
        self._kept = None
        return kept.strips()

    def forget_lines(self) -> None:
        """Pruned from the transcript: its lines are not drawn again (drawn anew if they are)."""
        self._drawn_lines = None
        self._kept = None
        self._folded = None

    def fold_lines(self) -> None:
        """Out of view: its lines are kept as tuples of text and style, which the cyclic
        collector does not walk (a Strip comes with seven caches, each a tracked object),
        and become Strips again when it is drawn. Lines with links stay as they are, and
        so do more than `FOLD_LINES`: making them Strips again would hold the loop."""
        cached = self._drawn_lines
        if cached is None or len(cached[1]) > FOLD_LINES:
            return
        lines = drawn_lines.encode_lines(cached[1])
        if lines is None:
            return
        self._folded = (cached[0], len(lines), tuple(tuple(line) for line in lines))
        self._drawn_lines = None

    def to_keep(self) -> drawn_lines.DrawnReply | None:
        """Its lines as drawn now, to be kept for the next open (None: nothing that may be
        kept: not drawn yet, drawn for another width, highlighted, or with plain code)."""
        cached = self._drawn_lines
        width = self.content_region.width
        folded = self._folded
        if self.seq is None or self.plain_code or self.highlight_link_id or self.text_selection:
            return None
        if cached is not None and cached[0] == self._key(width):
            lines = drawn_lines.encode_lines(cached[1])
        elif folded is not None and folded[0] == self._key(width):
            lines = [list(line) for line in folded[2]]
        else:
            return None
        if lines is None:
            return None
        style = drawn_lines.style_key(self.app.theme, self.visual_style)
        return drawn_lines.DrawnReply(self.seq, drawn_lines.digest(self.text), width, style, lines)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        folded = self._folded
        if folded is not None and width and folded[0] == self._key(width):
            return folded[1]  # measured folded: only drawing makes the lines Strips again
        lines = self._reply_lines(width) if width else None
        if lines is None:
            return super().get_content_height(container, viewport, width)
        return len(lines)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = self._reply_lines(width)
        if lines is None:
            return super().render_line(y)
        return lines[y] if 0 <= y < len(lines) else Strip.blank(width, self.visual_style.rich_style)


def draw_ahead(
    template: PastReply, replies: Sequence[tuple[int, str]]
) -> dict[int, drawn_lines.DrawnReply]:
    """Replies about to be mounted, drawn as `template` (a past reply on screen) draws its
    own: the lines each may use instead of rendering on the loop as it is laid out, kept
    by the seq of its log event. For a worker thread: it only reads the template.

    A reply whose lines would not be kept at quit (links, code drawn plain while its
    lexer is built) is left out; one that will be drawn at another width or style (a
    cancelled reply's border) does not use them."""
    width, style = template.size.width, template.visual_style
    if not width:
        return {}
    key = drawn_lines.style_key(template.app.theme, style)
    drawn: dict[int, drawn_lines.DrawnReply] = {}
    for seq, content in replies:
        text = safe_text(content)
        plain_before = code_lexers.plain_drawn
        strips = Visual.to_strips(
            template, visualize(template, _ReplyMarkdown(text)), width, None, style
        )
        lines = drawn_lines.encode_lines(strips)
        if lines is not None and code_lexers.plain_drawn == plain_before:
            drawn[seq] = drawn_lines.DrawnReply(seq, drawn_lines.digest(text), width, key, lines)
    return drawn


class _ReplyMarkdown:
    """A reply's Markdown, parsed when it is first drawn: a reply drawn from the lines the
    last session kept (tui.drawn_lines) never loads a parser."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._markdown: ConsoleRenderable | None = None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Any]:
        if self._markdown is None:
            from tui.widgets.replayed_markdown import ReplayedMarkdown

            self._markdown = ReplayedMarkdown(self.text)
        yield self._markdown


class Notice(PlacedOnce, Static):
    """Something the app says, not chat: results, errors, hints."""

    DEFAULT_CSS = """
    Notice { color: $text-muted; }
    Notice.-error { color: $text-error; background: $error-muted; }
    Notice.-warning { color: $text-warning; background: $warning-muted; }
    Notice.-success { color: $text-success; }
    """

    def __init__(self, text: str, *, variant: str = "") -> None:
        text = safe_text(text)
        super().__init__(Content(text))
        self.text = text
        if variant:
            self.add_class(f"-{variant}")
