"""A long top-level list being streamed: the rows of its finished items are kept.

Rich draws each item of a list on its own: a bullet, or a number right-aligned to
the width of the list's last number, then the item's blocks wrapped to the width
left. So the rows of the items before a cut are the rows those items had, and the
rows from the cut on are the rows of the rest of the list drawn alone. Each frame
draws the list from its last cut (the window) and then tries to cut before the
window's last `KEEP_ITEMS` items: the cut is taken when the rest drawn alone gives
exactly the window's rows from there. A numbered list numbers its items from its first
number on, whatever the others say ("1." throughout is common), so the rest is drawn
as if its first marker said the number Rich gives that item.
When the width of a numbered list's last number grows (its 10th, its 100th item),
its kept items are drawn with the new width: the list is drawn whole, once, and cut
again; past `REDRAW_ROWS` kept rows that one frame would hold the loop (a tenth of a
second from about a thousand items), so the kept rows stay as they are, `stale`, and
the reply is drawn whole once it ends, off the loop. So a frame draws a couple of
items and the new text, however long the list.

The window is parsed each frame: when it is no longer one list, the list has ended
(the text after it goes back to the reply) or turned into something else, and the
reply parses it whole again.
"""

from __future__ import annotations

import re

from textual.strip import Strip

from tui.live.kept_window import KeptWindow
from tui.live.markdown import Draw, LiveMarkdown, blocks, line_offset, render_after

KEEP_ITEMS = 2
"""Items at the end of the window drawn again each frame."""
LISTS = ("bullet_list_open", "ordered_list_open")
REDRAW_ROWS = 400
"""Kept rows drawn again at once when a numbered list's numbers grow a digit; past them
the list is `stale` until the reply ends."""
_NUMBER = re.compile(r"( {0,3})(\d{1,9})(?=[.)])")
"""A numbered item's marker, up to its delimiter."""


class LiveList(KeptWindow):
    """A top-level list, fed as it streams. Once it ends: `finished`, with the text after
    it in `rest`; once it turns into something else: `broken`."""

    def __init__(self, draw: Draw, text: str, before: bool | None) -> None:
        super().__init__(draw)
        self._before = before
        """The `new_line` of the part above (None: first in the reply)."""
        self._kind = ""
        """The list's opening token type (bullet or ordered), once parsed."""
        self._digits = 0
        """The width of the last number the kept items were drawn with (ordered lists)."""
        self.stale = False
        """Its kept rows hold numbers a digit narrower than Rich now draws them: the reply
        is drawn whole when it ends."""
        self._number: int | None = None
        """The number Rich gives the window's first item once items are kept (ordered
        lists): the window is drawn as if its first marker said so."""
        self.wanted: set[str] = set()
        """Languages of code in its items drawn plain while their lexer is not built."""
        self.feed(text)

    def gap(self, before: bool | None) -> int:
        return 0  # the blank row above is its own first row, as Rich draws a list's

    def feed(self, text: str) -> None:
        self._changed = min(self._changed, len(self._kept))
        self._window += text
        window = self._window
        markdown = LiveMarkdown(_numbered(window, self._number))
        tops = blocks(markdown)
        if not tops or tops[0].type not in LISTS or self._kind not in ("", tops[0].type):
            self.broken = True
            return
        self._kind = tops[0].type
        if len(tops) > 1:
            assert tops[0].map is not None
            end = line_offset(window, tops[0].map[1])
            self._window, self.rest = window[:end], window[end:]
            self._draw_window(_numbered(self._window, self._number))
            self.finished = True
            return
        items = _items(markdown)
        if self._kept and self._ordered and _last_digits(markdown, items) != self._digits:
            if len(self._kept) <= REDRAW_ROWS:
                self.resize(self._draw)  # the kept numbers are a digit too narrow now
                return
            self.stale = True
            self._digits = _last_digits(markdown, items)
        self._draw_window(window, markdown)
        self._cut(markdown, items)

    @property
    def _ordered(self) -> bool:
        return self._kind == "ordered_list_open"

    def _draw_window(self, text: str, markdown: LiveMarkdown | None = None) -> None:
        """The window's rows: the list's own from its top (the blank row above it, as Rich
        draws it after the part above), or from a cut on, as they follow the kept."""
        if not self._kept:
            self._rows, drawn = render_after(self._draw, text, self._before)
            wanted = drawn.wanted
        else:
            self._rows, wanted = _rows_after_cut(self._draw, markdown or LiveMarkdown(text))
        self.wanted |= wanted

    def _cut(self, markdown: LiveMarkdown, items: int) -> None:
        """Keep the rows of the window's items but its last `KEEP_ITEMS` when a cut before
        them is sure to hold."""
        if items <= KEEP_ITEMS:
            return
        opening = [t for t in markdown.parsed if t.type == "list_item_open" and t.level == 1]
        first = opening[-KEEP_ITEMS].map
        assert first is not None
        window = self._window
        at = line_offset(window, first[0])  # a line of the window's own text: same lines
        number = None
        if self._ordered:  # the number Rich gives the item, whatever its marker says
            number = _start(markdown) + items - KEEP_ITEMS
        tail = LiveMarkdown(_numbered(window[at:], number))
        tops = blocks(tail)
        if len(tops) != 1 or tops[0].type != self._kind:
            return
        rows, _ = _rows_after_cut(self._draw, tail)
        kept = len(self._rows) - len(rows)
        if kept <= 0 or rows != self._rows[kept:]:
            return
        if self._ordered:
            self._digits = _last_digits(markdown, items)
        self._kept.extend(self._rows[:kept])
        self._kept_text.append(window[:at])
        self._window, self._rows, self._number = window[at:], rows, number

    def resize(self, draw: Draw) -> None:
        """Draw at another width or style: the whole list once, then cut again."""
        self._draw = draw
        text = self.text
        self._changed = 0
        self._kept, self._kept_text, self._rows = [], [], []
        self._number, self.stale = None, False
        if self.finished:
            self._window = text
            self._draw_window(text)
        else:
            self._window = ""
            self.feed(text)

    def lexer_built(self) -> None:
        """Code in its items was drawn plain: draw it again with the lexers built."""
        if self.wanted:
            self.wanted = set()
            self.resize(self._draw)


def _start(markdown: LiveMarkdown) -> int:
    """The number Rich gives the first item of the (one) top-level list parsed."""
    return int(blocks(markdown)[0].attrs.get("start", 1) or 1)


def _last_digits(markdown: LiveMarkdown, items: int) -> int:
    """How wide Rich draws the list's last number: the window's first number and its
    items (the kept ones before it make up the difference)."""
    return len(str(_start(markdown) + items))


def _numbered(text: str, number: int | None) -> str:
    """`text` (items from the start of one) with its first number `number` (None: as it
    is)."""
    if number is None:
        return text
    return _NUMBER.sub(lambda m: m.group(1) + str(number), text, count=1)


def _items(markdown: LiveMarkdown) -> int:
    """The items of the (one) top-level list parsed."""
    return sum(1 for t in markdown.parsed if t.type == "list_item_open" and t.level == 1)


def _rows_after_cut(draw: Draw, markdown: LiveMarkdown) -> tuple[list[Strip], set[str]]:
    """The rows of items drawn alone, as they follow the items above them: Rich draws a
    blank row above a list that begins a document, which is not there between items."""
    rows = draw.render(markdown)
    if rows and not rows[0].text.strip():
        rows = rows[1:]
    return rows, markdown.wanted
