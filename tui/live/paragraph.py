"""A long top-level paragraph being streamed: the rows that can no longer change are kept.

Rich wraps a paragraph greedily, so the rows before a break depend only on
the text before it, and the rows after it are the rows of the text from the
break on, drawn alone. Each frame draws the paragraph's text from its last
cut (the window) and then tries to cut again where the last `KEEP_ROWS` rows
begin: the cut is taken when the text before it leaves no inline construct
open (an emphasis, a code span, a link that later text could still close
would restyle rows already kept), the word after it holds no inline syntax
(its width decides where the row before it ends), the text after it drawn
alone gives exactly those rows, and it is a paragraph on its own. So a frame draws a few rows and
the new text, however long the paragraph grows.

The window is parsed each frame: when it is no longer one paragraph, the
paragraph has ended (the text after it goes back to the reply) or turned into
something else (a setext heading, a table), and the reply parses it whole
again. So it does for a paragraph holding an image: Rich draws an image
above the paragraph it is in, so such a paragraph is drawn whole each frame.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from tui.live.kept_window import KeptWindow
from tui.live.markdown import (
    Draw,
    LiveMarkdown,
    blocks,
    has_image,
    line_offset,
    parser_like_rich,
)

KEEP_ROWS = 2
"""Rows at the end of the window drawn again each frame."""
TRIES = 6
"""Word starts tried as the cut, from where the kept rows' text would begin."""

_SYNTAX = re.compile(r"[`\[<]|~~|[*_]")
"""Characters of Markdown's inline syntax that can open a construct."""
_WORD = re.compile(r"[^\s`*_~\[\]<>!&\\]+(?=\s)")
"""A word with no character of Markdown's inline syntax, whole (white space follows):
the word after a cut is what decides where the row before it ends, so it must keep
its width whatever comes later."""
_DELIMITER_ROW = re.compile(r" {0,3}[|:-][\s|:-]*")
"""A line that may be a table's delimiter row, making the line above a table's head."""


def _closed(text: str) -> bool:
    """Whether `text`, as the start of a paragraph, leaves nothing that later text could
    still pair with: every backtick, bracket, angle bracket, double tilde, and star or
    underscore that could open (CommonMark: one followed by a space cannot, nor an
    underscore between letters) was taken by a construct, or escaped (`text_special`)."""
    for token in _inline_parser().parseInline(text):
        for child in token.children or ():
            if child.type == "text" and _may_open(child.content):
                return False
    return True


def _may_open(text: str) -> bool:
    for match in _SYNTAX.finditer(text):
        if match.group() not in "*_":
            return True
        at = match.start()
        after = text[at + 1 : at + 2]
        if after and after.isspace():
            continue
        if match.group() == "_" and after.isalnum() and text[at - 1 : at].isalnum():
            continue
        return True
    return False


def _inline_parser() -> MarkdownIt:
    """Rich's parser, but escapes and entities stay tokens of their own (`text_special`)."""
    global _INLINE
    if _INLINE is None:
        _INLINE = parser_like_rich().disable("text_join")
    return _INLINE


_INLINE: MarkdownIt | None = None


def _visible(text: str) -> int:
    return len(text) - sum(1 for ch in text if ch.isspace())


class LiveParagraph(KeptWindow):
    """A top-level paragraph, fed as it streams. Once it ends: `finished`, with the text
    after it in `rest`; once it turns into something else: `broken`."""

    def __init__(self, draw: Draw, text: str) -> None:
        super().__init__(draw)
        self.feed(text)

    def gap(self, before: bool | None) -> int:
        return int(bool(before))

    def feed(self, text: str) -> None:
        self._changed = min(self._changed, len(self._kept))
        self._window += text
        window = self._window
        if self._kept_text and not self._kept_text[-1].endswith("\n"):
            lines = window.split("\n", 2)
            if len(lines) > 1 and "|" in lines[1] and _DELIMITER_ROW.fullmatch(lines[1]):
                self.broken = True  # a table's head: all of the line cut, not its end
                return
        markdown = LiveMarkdown(window)
        tops = blocks(markdown)
        if not tops or tops[0].type != "paragraph_open" or has_image(markdown, tops[0]):
            self.broken = True
            return
        if len(tops) > 1:
            assert tops[0].map is not None
            end = line_offset(window, tops[0].map[1])
            self._window, self.rest = window[:end], window[end:]
            self._rows = self._draw.render(LiveMarkdown(self._window))
            self.finished = True
            return
        self._rows = self._draw.render(markdown)
        self._cut()

    def _cut(self) -> None:
        """Keep the rows before the last `KEEP_ROWS` when a cut there is sure to hold."""
        rows, window = self._rows, self._window
        if len(rows) <= KEEP_ROWS:
            return
        first = len(rows) - KEEP_ROWS
        wanted = sum(_visible(row.text) for row in rows[first:])
        at, seen = len(window), 0
        while at > 0 and seen < wanted:  # where the last `wanted` visible characters begin
            at -= 1
            seen += not window[at].isspace()
        tries = 0
        while at > 0 and tries < TRIES:
            if not window[at].isspace() and window[at - 1].isspace():
                tries += 1
                if self._try_cut(at, first):
                    return
            at -= 1

    def _try_cut(self, at: int, first: int) -> bool:
        window = self._window
        word = _WORD.match(window, at)
        if word is None or not _closed(window[:at]):
            return False
        tail = LiveMarkdown(window[at:])
        tops = blocks(tail)
        if len(tops) != 1 or tops[0].type != "paragraph_open":
            return False
        rows = self._draw.render(tail)
        if rows != self._rows[first:]:
            return False
        self._kept.extend(self._rows[:first])
        self._kept_text.append(window[:at])
        self._window, self._rows = window[at:], rows
        return True

    def resize(self, draw: Draw) -> None:
        """Draw at another width or style: the whole paragraph once, then cut again."""
        self._draw = draw
        self._changed = 0
        text = self.text
        self._kept, self._kept_text, self._window = [], [], text
        markdown = LiveMarkdown(text)
        self._rows = draw.render(markdown)
        if not self.finished:
            self._cut()

    def lexer_built(self) -> None:
        """A paragraph holds no code block."""
