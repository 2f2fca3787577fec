"""A fenced code block being streamed: each line lexed about once, only shown rows drawn.

Rich draws a code block as `Syntax(content.rstrip(), padding=1)`: a padding
row, each line of the highlighted text wrapped on its own, a padding row. A
line's rows depend on nothing but its tokens and the width, so a line is
drawn alone when it is shown (tui.live.code_rows). A line that fits the
width is one row, so the block's height is known without drawing the lines
scrolled out of view.

A line's tokens depend on the lexer's state where it starts, which Pygments
does not tell. Lines are lexed from an anchor, a line where lexing from the
start state gives what lexing the whole block gives: each frame lexes from
the anchor to the end, then the last `KEEP` lines alone, and where both
agree the states agree, so the anchor moves there and the lines before it are
final. It never moves past a line where the lexer balked (an error token: a
quote left open, which a later line may close with one token over all the
lines between). Inside a multi-line string or comment the two never agree:
the window grows to `WINDOW` lines, then the anchor moves on anyway, and the
lines after it may be coloured wrong until the finished reply is drawn whole.

Whether the fence is closed and what each line holds without the fence's
indentation, markdown-it says, from the fence's first line and the new text.

The lexing is a job sent to `lexing` (tui.live.lexing): done at once, or off the
UI loop while the block shows the lines lexed so far. One job is out at a time;
text fed meanwhile is lexed by the next, and the block is `finished` only once
the lines up to its closing fence are lexed, so the rows that follow it are
placed under its final height.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import partial

from pygments.lexer import Lexer  # type: ignore[import-untyped]
from rich.syntax import Syntax, SyntaxTheme
from textual.strip import Strip

from tui import code_lexers
from tui.live.code_rows import CodeRows, Line, has_error, lex, plain
from tui.live.lexing import Inline, Lexing
from tui.live.markdown import Draw, parser

KEEP = 3
"""Lines at the end lexed again each frame; the anchor moves to the first of them."""
WINDOW = 120
"""Lines lexed each frame at most while lexing from the anchor and from `KEEP` lines
before the end disagree (inside a long string or comment)."""
TAB_SIZE = 4
"""Rich's Syntax expands tabs to this size before lexing."""

_THEMES: dict[str, SyntaxTheme] = {}


def _theme(name: str) -> SyntaxTheme:
    theme = _THEMES.get(name)
    if theme is None:
        theme = _THEMES[name] = Syntax.get_theme(name)
    return theme


def _lexer(language: str) -> Lexer:
    """The lexer Rich's Syntax picks for this language (plain text when it knows none)."""
    syntax = Syntax("", language)
    return syntax.lexer or syntax.default_lexer


class LiveCode:
    """A top-level fenced code block, fed as it streams; `finished` once its closing
    fence is whole, with the text after it in `rest`."""

    new_line = True

    def __init__(
        self,
        draw: Draw,
        opener: str,
        language: str,
        theme: str,
        text: str,
        lexing: Lexing | None = None,
    ) -> None:
        self._lexing: Lexing = Inline()
        """Where jobs go: at once for the block's first line (the reply's open tail showed
        it, and the block never shows fewer rows), then `lexing`."""
        self._out = False
        """A lexing job is out."""
        self._again = False
        """Text came since the job out was sent (only ever set while one is out)."""
        self._sent = 0
        """The number of the last job sent: a job back with another number was dropped
        (the lexer changed, or its lines were lexed at once)."""
        self._ready: list[tuple[int, list[Line]]] = []
        """Jobs back and not shown yet: the first line each lexed, and their tokens."""
        self._closed = False
        self._opener = opener
        self.language = language
        self._theme = _theme(theme)
        self.waiting = not code_lexers.built(language)
        """Drawn plain until the reply has the language's lexer built off the loop."""
        self._lexer = _lexer("text" if self.waiting else language)
        self._raw = [opener, "\n"]
        self.lines: list[str] = []
        """The finished lines, their tabs expanded and the fence's indentation taken off."""
        self._last_text = -1
        """The last finished line holding more than white space."""
        self._partial = ""
        self._partial_shown: str | None = None
        """The line being streamed, as shown; None while it closes the fence."""
        self.rest = ""
        self._anchors = [0]
        """Every line the anchor stood on, the current last."""
        self._tokens: list[Line] = []
        """Each shown line's tokens."""
        self._drawn: dict[int, tuple[Line, list[Strip]]] = {}
        """Rows Rich drew, by line (a line that wraps, or that was not composed)."""
        self._starts: list[int] = []
        """Each shown line's first row, not counting the padding row."""
        self._content = 0
        self._changed = 0
        """The first row that may differ since `take_changed`."""
        self.resize(draw)
        head, newline, tail = text.partition("\n")
        self.feed(head + newline)
        self.take_lexed()
        self._lexing = lexing or self._lexing
        if tail:
            self.feed(tail)

    @property
    def text(self) -> str:
        """The block's Markdown source fed so far."""
        return "".join(self._raw)

    @property
    def height(self) -> int:
        return self._content + 2

    @property
    def finished(self) -> bool:
        """The closing fence was fed and every line before it is lexed and shown."""
        return self._closed and not self._out and not self._ready

    @property
    def lexing(self) -> bool:
        """A lexing job is out: lines fed are not shown yet."""
        return self._out

    @property
    def relexed(self) -> bool:
        """Lines were lexed and are not shown yet (`take_lexed`)."""
        return bool(self._ready)

    def gap(self, before: bool | None) -> int:
        return int(bool(before))

    def take_changed(self) -> int:
        """The first row that may differ since the last call: the lines lexed again, on."""
        changed, self._changed = self._changed, self.height
        return changed

    def feed(self, text: str) -> None:
        """The next text of the reply: the block's lines, maybe its closing fence and more
        (kept in `rest`)."""
        if self._closed:
            self.rest += text
            return
        raw = self._partial + text
        # A line after the text: an open fence takes it in, a closed one leaves it out.
        tokens = parser().parse(f"{self._opener}\n{raw}\nx")
        fence = tokens[0]
        assert fence.type == "fence" and fence.map is not None
        parts = raw.split("\n")
        content = fence.content.split("\n")
        if len(tokens) == 1:
            self._add(content[: len(parts) - 1])
            self._partial, self._partial_shown = parts[-1], content[len(parts) - 1]
        else:
            closing = fence.map[1] - 2
            self._add(content[:closing])
            self._partial_shown = None
            if closing < len(parts) - 1:
                self._closed = True
                self.rest = "\n".join(parts[closing + 1 :])
                self._partial = ""
                text = text[: len(text) - len(self.rest)]
            else:  # the line being streamed closes it so far, unless more comes on that line
                self._partial = parts[-1]
        self._raw.append(text)
        self._relex()

    def _add(self, lines: list[str]) -> None:
        for line in lines:
            line = line.expandtabs(TAB_SIZE)
            if line.strip():
                self._last_text = len(self.lines)
            self.lines.append(line)

    def _shown(self) -> tuple[int, str]:
        """How many lines are shown and the last one's text: Rich strips the end of the
        block's text, its blank lines and the last line's trailing spaces."""
        partial = self._partial_shown
        if partial is not None and partial.strip():
            return len(self.lines) + 1, partial.expandtabs(TAB_SIZE).rstrip()
        if self._last_text >= 0:
            return self._last_text + 1, self.lines[self._last_text].rstrip()
        return 1, ""

    def _relex(self) -> None:
        """Send the lines from the anchor to the end to be lexed (once the job out is back)."""
        self._again = True
        if self._out:
            return
        self._again = False
        shown, last = self._shown()
        anchors = self._anchors
        while anchors[-1] > shown - 1:  # the last line shown must be lexed again
            anchors.pop()
        first = anchors[-1]
        texts = self.lines[first : shown - 1] + [last]
        self._out = True
        self._sent += 1
        job = partial(_lex_from, self._lexer, texts, first, shown)
        self._lexing.submit(job, partial(self._lexed, self._sent))

    def _lexed(self, sent: int, lexed: _Lexed) -> None:
        """A job is back (on the UI loop): its lines are shown by the next `take_lexed`.
        The next job goes out at once."""
        if sent != self._sent:
            return
        self._out = False
        first, tokens, anchors = lexed
        self._anchors.extend(anchors)
        self._ready.append((first, tokens))
        if self._again:
            self._relex()

    def lex_now(self) -> None:
        """From now on lex on the caller's turn, the job out and the text waiting too (the
        reply has ended: its last frame shows it all, without waiting on the worker)."""
        self._lexing = Inline()
        if self._out:
            self._out = False  # the job out is dropped when it comes back
            self._relex()

    def take_lexed(self) -> None:
        """Show the lines lexed since the last call (the frame's turn: the block's
        height changes only as the reply is read)."""
        for first, tokens in self._ready:
            self._place(first, tokens)
        self._ready.clear()

    def _place(self, first: int, tokens: list[Line]) -> None:
        """Lines from `first` on have these tokens: count their rows (a line that fits is
        one row, drawn when shown; one that wraps is drawn now)."""
        drawn = self._drawn
        row = 1 + (self._starts[first] if first < len(self._starts) else self._content)
        self._changed = min(self._changed, row)
        for i in [i for i in drawn if i >= first]:
            if i >= first + len(tokens) or drawn[i][0] != tokens[i - first]:
                del drawn[i]
        del self._tokens[first:], self._starts[first:]
        self._tokens.extend(tokens)
        at = self._starts[-1] + self._count(first - 1) if first else 0
        for i in range(first, len(self._tokens)):
            self._starts.append(at)
            at += self._count(i)
        self._content = at

    def _count(self, i: int) -> int:
        line = self._tokens[i]
        if i not in self._drawn and self._rows.fits(line):
            return 1
        return len(self._line_rows(i))

    def _line_rows(self, i: int) -> list[Strip]:
        entry = self._drawn.get(i)
        if entry is not None:
            return entry[1]
        line = self._tokens[i]
        if self._rows.composes(line):
            return [self._rows.compose(line)]
        rows = self._rows.draw(line)
        self._drawn[i] = (line, rows)
        return rows

    def row(self, y: int) -> Strip:
        """Row `y` of the block, drawn now: composed, or kept from Rich's drawing."""
        if y <= 0 or y > self._content:
            return self._rows.top if y <= 0 else self._rows.bottom
        y -= 1
        i = bisect_right(self._starts, y) - 1
        rows = self._line_rows(i)
        at = y - self._starts[i]
        return rows[at] if at < len(rows) else Strip([])

    def resize(self, draw: Draw) -> None:
        """Draw at another width or style: the tokens stay, the rows are drawn again."""
        self._rows = CodeRows(draw, self._theme)
        self._changed = 0
        self._drawn.clear()
        self._starts.clear()
        self._place(0, self._tokens[:])

    def lexer_built(self) -> None:
        """The language's lexer is built: lex the whole block again with it (once)."""
        if self.waiting and code_lexers.built(self.language):
            self.waiting = False
            self._lexer = _lexer(self.language)
            self._anchors = [0]
            self._out = False  # a job out lexed with the plain lexer: dropped
            self._relex()  # the plain lines stay shown until the job is back


_Lexed = tuple[int, list[Line], list[int]]
"""A job's result: the first line lexed, the lines' tokens, the anchors found."""


def _lex_from(lexer: Lexer, texts: list[str], first: int, shown: int) -> _Lexed:
    """Lex `texts`, lines `first` to `shown` of the block, from the lexer's start state, and
    find where the anchor moves: the first of the last `KEEP` lines, if lexing from there
    alone gives the same tokens (and no line before it balked). Runs off the UI loop; it
    never raises (the lines are plain if the lexer does)."""
    try:
        tokens = lex(lexer, texts)
        start = shown - KEEP
        anchors = []
        balked = (i for i, line in enumerate(tokens[: max(0, start - first)]) if has_error(line))
        at = next(balked, start - first)  # not past a line the lexer balked at
        fresh = at > 0 and not texts[at].startswith("\ufeff")  # (lexers drop a leading BOM)
        if fresh and lex(lexer, texts[at:]) == tokens[at:]:
            anchors.append(first + at)
        if shown - (anchors[-1] if anchors else first) > WINDOW:  # inside a long string
            anchors.append(start)
        return first, tokens, anchors
    except Exception:  # a lexer's own failure: the lines are drawn plain, the frame goes on
        return first, plain(texts), []
