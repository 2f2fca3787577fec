"""Rich's Markdown as the streamed reply draws it, and what a part of it needs to know.

A code block whose Pygments lexer is not built yet is drawn plain in the
same box (the lexer's class compiles its rules when first made, which would
hold the loop) and its language is noted, so the reply builds it off the loop
and draws the block again. `Draw` is how a part is drawn: the reply widget's
width and a function that turns a Rich renderable into its rows there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from markdown_it import MarkdownIt
from rich.markdown import CodeBlock, MarkdownElement, TableElement
from rich.markdown import Markdown as RichMarkdown
from rich.measure import Measurement
from rich.syntax import Syntax
from rich.table import Table

from tui import code_lexers

if TYPE_CHECKING:
    from markdown_it.token import Token
    from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderResult
    from textual.strip import Strip


Render = Callable[["ConsoleRenderable"], "list[Strip]"]
"""Turns a Rich renderable into its rows (at the reply widget's width and style)."""


@dataclass(frozen=True)
class Draw:
    """How the parts of a reply are drawn: at `width`, by `render` (the widget's own
    pipeline, so a part's rows are the rows the whole reply would have there)."""

    width: int
    render: Render
    key: object = field(default=None)
    """What the rows depend on besides the width (the widget's style)."""
    _leads: dict[str, int] = field(default_factory=dict, compare=False, hash=False, repr=False)
    memo: dict[object, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    """What parts learn of drawing at this width and style, for the reply's other parts
    (tui.live.code_rows: each code token kind's style in a row)."""

    def lead_rows(self, text: str) -> int:
        """How many rows `text` takes (a stand-in block, drawn once per `Draw`)."""
        rows = self._leads.get(text)
        if rows is None:
            rows = self._leads[text] = len(self.render(LiveMarkdown(text)))
        return rows


def parser_like_rich() -> MarkdownIt:
    """A new parser set up as Rich's Markdown sets up its own."""
    return MarkdownIt().enable("strikethrough").enable("table")


def parser() -> MarkdownIt:
    """The parser Rich's Markdown uses, made once (Rich makes one per document)."""
    global _PARSER
    if _PARSER is None:
        _PARSER = parser_like_rich()
    return _PARSER


_PARSER: MarkdownIt | None = None


class _PlainUntilBuilt(CodeBlock):
    """Rich's code block, drawn plain while its lexer is not built (its name is noted)."""

    wanted: set[str]

    @classmethod
    def create(cls, markdown: RichMarkdown, token: Token) -> CodeBlock:
        block = super().create(markdown, token)
        assert isinstance(block, _PlainUntilBuilt) and isinstance(markdown, LiveMarkdown)
        block.wanted = markdown.wanted
        return block

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if code_lexers.built(self.lexer_name):
            yield from super().__rich_console__(console, options)
            return
        self.wanted.add(self.lexer_name)
        code = str(self.text).rstrip()
        yield Syntax(code, "text", theme=self.theme, word_wrap=True, padding=1)


class _Witness:
    """A table cell that draws nothing but measures as `measure`: it stands for the rows
    of its column kept above, so the table gets the column widths it has whole. Drawn,
    it notes the width it was given (its column's, less the cell's padding)."""

    def __init__(self, measure: Measurement, widths: list[int]) -> None:
        self.measure = measure
        self.widths = widths

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return self.measure

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self.widths.append(options.max_width)
        yield from ()


class _MeasuredTable(TableElement):
    """Rich's table, whose body cells are measured on request (`LiveMarkdown.measured`)
    and which gets a last row of witnesses when the document has some
    (`LiveMarkdown.witness`): that row is one blank row above the table's bottom edge,
    and notes the columns' widths (`LiveMarkdown.widths`)."""

    markdown: LiveMarkdown

    @classmethod
    def create(cls, markdown: RichMarkdown, token: Token) -> MarkdownElement:
        table = super().create(markdown, token)
        assert isinstance(table, _MeasuredTable) and isinstance(markdown, LiveMarkdown)
        table.markdown = markdown
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        markdown = self.markdown
        if markdown.measured is not None and self.body is not None:
            markdown.measured = [
                [Measurement.get(console, options, cell.content) for cell in row.cells]
                for row in self.body.rows
            ]
        for renderable in super().__rich_console__(console, options):
            if markdown.witness is not None and isinstance(renderable, Table):
                widths: list[int] = []
                markdown.widths = widths
                renderable.add_row(*(_Witness(measure, widths) for measure in markdown.witness))
            yield renderable


class LiveMarkdown(RichMarkdown):
    """Rich's Markdown whose code blocks wait plain for their lexer; `wanted` collects the
    languages that waited. Its table may be measured and given witnesses (`LiveTable`)."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **RichMarkdown.elements,
        "fence": _PlainUntilBuilt,
        "code_block": _PlainUntilBuilt,
        "table_open": _MeasuredTable,
    }

    def __init__(
        self,
        markup: str,
        witness: list[Measurement] | None = None,
        measure: bool = False,
    ) -> None:
        # Rich's own __init__ makes a parser per document (half a millisecond, several
        # times a frame): the same attributes, parsed by the parser made once.
        self.__dict__.update(_plain_document().__dict__)
        self.markup = markup
        self.parsed = parser().parse(markup)
        self.wanted: set[str] = set()
        self.witness = witness
        """Each column's measure for a last, blank row of its table (None: no such row)."""
        self.measured: list[list[Measurement]] | None = [] if measure else None
        """Once drawn, if asked for: the measure of each body cell of its table, by row."""
        self.widths: list[int] = []
        """Once drawn with a witness: the width its table gave each column's witness."""


def _plain_document() -> RichMarkdown:
    """An empty document made by Rich: its attributes are what `LiveMarkdown` copies."""
    global _PLAIN
    if _PLAIN is None:
        _PLAIN = RichMarkdown("")
    return _PLAIN


_PLAIN: RichMarkdown | None = None


_LEADS = {True: "x\n\n", False: "---\n\n"}
"""A block that leaves Rich's `new_line` as the part before left it: a paragraph, a rule."""


def render_after(
    draw: Draw, text: str, before: bool | None, *, measure: bool = False
) -> tuple[list[Strip], LiveMarkdown]:
    """The rows of `text` as Rich draws them after a block whose `new_line` is `before`
    (None: first in the reply), and the document drawn (its `wanted`, the languages
    drawn plain; its table's cells `measured` if `measure`).

    Rich puts a blank row before a block when the element it closed last asks for one,
    and a list or a quote closes its own paragraphs first: so the blank row is drawn by
    Rich itself, after a stand-in block whose rows are then dropped.
    """
    lead = "" if before is None else _LEADS[before]
    markdown = LiveMarkdown(lead + text, measure=measure)
    rows = draw.render(markdown)
    if lead:
        rows = rows[draw.lead_rows(lead) :]
    return rows, markdown


def blocks(markdown: RichMarkdown) -> list[Token]:
    """The tokens that open the top-level blocks (each has its source lines in `map`)."""
    return [t for t in markdown.parsed if t.level == 0 and t.nesting >= 0 and t.map is not None]


def has_image(markdown: RichMarkdown, paragraph: Token) -> bool:
    """Whether this top-level paragraph holds an image (Rich draws it above the paragraph)."""
    tokens = markdown.parsed
    at = next(i for i, token in enumerate(tokens) if token is paragraph)
    inline = tokens[at + 1]
    return any(child.type == "image" for child in inline.children or ())


def new_line_after(block: Token) -> bool:
    """Whether Rich puts a blank row after this top-level block (all but a rule do)."""
    element = RichMarkdown.elements.get(block.type)
    return element is None or element.new_line


def line_offset(text: str, line: int) -> int:
    """Where line number `line` of `text` starts (len(text) past its last line)."""
    at = -1
    for _ in range(line):
        at = text.find("\n", at + 1)
        if at < 0:
            return len(text)
    return at + 1
