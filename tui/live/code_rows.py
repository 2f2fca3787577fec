"""A code block's lines drawn as Rich's Syntax draws them, one line at a time.

A line is kept as its tokens' texts and kinds (tuples of strings and small
numbers, which the garbage collector stops tracking: a long block does not
lengthen its pauses). Rich draws a line from its tokens (a one-line Syntax
replaying them) into rows that are the line's rows in the whole block. For a
line that fits the width that row is always the same shape: the left
padding, a segment per token in that kind's style, the fill, the right
padding. So once Rich has drawn a line, its kinds' styles and the padding
are taken from its row, and a later line whose kinds are all known is
composed from them directly, far cheaper; a composed row must equal the row
Rich drew for the line it was learnt from, or composing stops. What is learnt
holds for every block of the reply drawn at that width and style in that theme
(`_Look`, kept on the `Draw`), so a reply's later blocks compose from their
first line.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from pygments.lexer import Lexer  # type: ignore[import-untyped]
from pygments.token import Token  # type: ignore[import-untyped]
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax, SyntaxTheme
from textual.strip import Strip

from tui.live.markdown import Draw

Line = tuple[tuple[str, ...], tuple[int, ...]]
"""One line's tokens: their texts (the last ends with the line break) and kinds
(numbers in `KINDS`)."""

KINDS: list[Any] = []
"""Pygments token types, numbered in the order first met."""
ERRORS: set[int] = set()
"""The numbers of the error kinds (text the lexer could not match)."""
_NUMBERS: dict[Any, int] = {}
_numbering = threading.Lock()


def kind_number(kind: Any) -> int:
    number = _NUMBERS.get(kind)
    if number is None:
        with _numbering:  # lexing runs in a worker thread, or on the loop
            number = _NUMBERS.get(kind)
            if number is None:
                if kind in Token.Error:
                    ERRORS.add(len(KINDS))
                KINDS.append(kind)
                number = _NUMBERS[kind] = len(KINDS) - 1
    return number


def has_error(line: Line) -> bool:
    """Whether the lexer could not match some of the line (an open quote, say, that a
    later line may close: one token over all the lines between)."""
    return not ERRORS.isdisjoint(line[1])


def lex(lexer: Lexer, texts: list[str]) -> list[Line]:
    """Each line's tokens, lexing `texts` as one text from the lexer's start state."""
    lines: list[tuple[list[str], list[int]]] = [([], [])]
    for kind, value in lexer.get_tokens("\n".join(texts) + "\n"):
        number = kind_number(kind)
        while value:
            head, newline, value = value.partition("\n")
            values, kinds = lines[-1]
            values.append(head + newline)
            kinds.append(number)
            if newline:
                lines.append(([], []))
    lines.pop()
    if len(lines) != len(texts):  # a lexer that does not give its text back: drawn plain
        return plain(texts)
    return [(tuple(values), tuple(kinds)) for values, kinds in lines]


def plain(texts: list[str]) -> list[Line]:
    """Each line as one token of plain text."""
    number = kind_number(Token.Text)
    return [((text + "\n",), (number,)) for text in texts]


def line_text(line: Line) -> str:
    return "".join(line[0])[:-1]


class _Replay(Lexer):
    """Yields the tokens of one line: Syntax draws it from tokens lexed before."""

    name = "replay"

    def __init__(self, line: Line) -> None:
        super().__init__(stripnl=False, ensurenl=True)
        self.line = line

    def get_tokens_unprocessed(self, text: str) -> Iterator[tuple[int, Any, str]]:
        values, kinds = self.line
        for value, number in zip(values, kinds, strict=True):
            yield 0, KINDS[number], value


class _Look:
    """How a theme's code rows look at one width and style, learnt from rows Rich drew."""

    def __init__(self, draw: Draw, theme: SyntaxTheme) -> None:
        pads = draw.render(Syntax("", "text", theme=theme, word_wrap=True, padding=1))
        self.top, self.bottom = pads[0], pads[-1]
        self.styles: dict[int, Style | None] | None = {}
        """Each token kind's style in a row, as Rich drew it (None: rows are not composed)."""
        self.frame: tuple[Segment, Style | None, Segment] | None = None
        """A row's left padding, its fill's style and its right padding."""


class CodeRows:
    """Draws a block's lines at one width and style."""

    def __init__(self, draw: Draw, theme: SyntaxTheme) -> None:
        self._draw = draw
        self._theme = theme
        self.code_width = max(0, draw.width - 2)
        """Cells of code in a row: Syntax pads a cell each side."""
        look = draw.memo.get((_Look, theme))
        if look is None:
            look = draw.memo[(_Look, theme)] = _Look(draw, theme)
        self._look: _Look = look
        self.top, self.bottom = look.top, look.bottom

    def fits(self, line: Line) -> bool:
        """Whether the line is one row (it fits the width)."""
        return cell_len(line_text(line)) <= self.code_width

    def composes(self, line: Line) -> bool:
        """Whether the line's row can be composed without Rich."""
        styles = self._look.styles
        if styles is None or self._look.frame is None:
            return False
        return all(kind in styles for kind in line[1]) and self.fits(line)

    def compose(self, line: Line) -> Strip:
        """The row of a line that `composes`."""
        styles, frame = self._look.styles, self._look.frame
        assert styles is not None and frame is not None
        left, fill_style, right = frame
        segments = [left]
        for value, kind in zip(*line, strict=True):
            value = value.rstrip("\n")
            if value:
                segments.append(Segment(value, styles[kind]))
        fill = self.code_width - cell_len(line_text(line))
        if fill:
            segments.append(Segment(" " * fill, fill_style))
        segments.append(right)
        return Strip(segments)

    def draw(self, line: Line) -> list[Strip]:
        """The line's rows as Rich draws them (learning the kinds' styles from a row)."""
        syntax = Syntax(
            line_text(line), _Replay(line), theme=self._theme, word_wrap=True, padding=(0, 1)
        )
        rows = self._draw.render(syntax)
        if len(rows) == 1 and self.fits(line):
            self._learn(line, rows[0])
        return rows

    def _learn(self, line: Line, row: Strip) -> None:
        """Take each kind's style from a row Rich drew: the left padding, a segment per
        token, the fill (if any), the right padding. Composing the line again must give
        the very same row, or rows are not composed at all."""
        look = self._look
        if look.styles is None:
            return
        kinds = [kind for value, kind in zip(*line, strict=True) if value.rstrip("\n")]
        segments = list(row)
        fill = self.code_width - cell_len(line_text(line))
        styles = dict(look.styles)
        frame = look.frame
        if len(segments) != len(kinds) + 2 + bool(fill):
            look.styles = None
            return
        for kind, segment in zip(kinds, segments[1:], strict=False):
            if styles.setdefault(kind, segment.style) != segment.style:
                look.styles = None
                return
        if fill:
            frame = (segments[0], segments[-2].style, segments[-1])
        look.styles, look.frame = styles, frame
        if frame is not None and self.compose(line) != row:
            look.styles = None
