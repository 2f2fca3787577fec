"""A long top-level table being streamed: the rows of its finished body rows are kept.

Rich draws a table's rows one under the other, at column widths taken from every
cell: per column, the widest of the cells' narrowest widths and the widest of
their widest (a `Measurement` each). So a body row's rows depend only on its
cells and on those column measures. Each frame draws the table's head and its
body rows from the last cut (the window), with one more row whose cells draw
nothing but measure as the kept rows' (witnesses, see `LiveMarkdown.witness`):
the window gets the whole table's widths. The head's rows and the witnesses' blank
row are dropped. It then tries to cut before the window's last `KEEP_ROWS` body
rows: the cut is taken when those drawn alone, witnessed by all above, give the
window's rows there.

The witnesses note the column widths they are given. When a finished row of the
window changes them from the widths the kept rows were drawn at, the table is drawn
whole again, once, and cut again; past `REDRAW_ROWS` kept rows that one frame would
hold the loop, so the kept rows stay as they are, `stale`, and the reply is drawn
whole once it ends, off the loop. A row not finished yet may change them for a few
frames (a link's raw text until its parenthesis closes): the window is drawn so,
and cut on its finished rows' widths. So a frame draws the head, a couple of rows
and the new text, however long the table.

The window is parsed each frame after the head: when it is no longer one table,
the table has ended (the text after it goes back to the reply) or turned into
something else, and the reply parses it whole again.
"""

from __future__ import annotations

from itertools import zip_longest

from rich.measure import Measurement
from textual.strip import Strip

from tui.live.kept_window import KeptWindow
from tui.live.markdown import Draw, LiveMarkdown, blocks, line_offset, render_after

KEEP_ROWS = 2
"""Body rows at the end of the window drawn again each frame."""
REDRAW_ROWS = 100
"""Kept rows drawn again at once when a column's measure grows; past them the table is
`stale` until the reply ends."""
TABLE = "table_open"

Measures = list[Measurement]
"""One measure per column."""


class LiveTable(KeptWindow):
    """A top-level table (its head and delimiter row first), fed as it streams. Once it
    ends: `finished`, with the text after it in `rest`; once it turns into something
    else: `broken`."""

    def __init__(self, draw: Draw, text: str, before: bool | None) -> None:
        super().__init__(draw)
        self._before = before
        """The `new_line` of the part above (None: first in the reply)."""
        self._head = text[: line_offset(text, 2)]
        """The table's head row and delimiter row: parsed and drawn with every window."""
        self._witness: Measures | None = None
        """The kept body rows' measures (None: none kept)."""
        self._drawn: list[int] = []
        """The column widths (as the witnesses note them) the kept rows were drawn at."""
        self._prefixes: dict[tuple[Measurement, ...], int] = {}
        """Rows above the first body row of a window, by the whole table's measures."""
        self._stale = False
        self._ragged = False
        """The window is drawn at other widths than the kept rows, for its last row, not
        finished yet (a link's raw text until its parenthesis closes)."""
        self.feed(text[len(self._head) :])

    @property
    def text(self) -> str:
        return self._head + super().text

    @property
    def stale(self) -> bool:
        """Its kept rows are drawn at other column widths than Rich draws them now: the
        reply is drawn whole when it ends (if they still are)."""
        return self._stale or self._ragged

    def gap(self, before: bool | None) -> int:
        return 0  # the blank row above is its own first row, as Rich draws a table's

    def feed(self, text: str) -> None:
        self._changed = min(self._changed, len(self._kept))
        self._window += text
        self._ragged = False
        window = self._window
        markdown = self._document(window)
        tops = blocks(markdown)
        if not tops or tops[0].type != TABLE:
            self.broken = True
            return
        if len(tops) > 1:
            assert tops[0].map is not None
            end = line_offset(markdown.markup, tops[0].map[1]) - len(self._head)
            self._window, self.rest = window[:end], window[end:]
            self.finished = True
            markdown = self._document(self._window)
            self._rows, _ = self._drawn_rows(markdown)
            if self._kept and markdown.widths != self._drawn:
                self._widened()
            return
        # The kept rows are drawn at the widths of the window's finished rows: a row not
        # finished yet may widen a column for a while (a link's raw text until its
        # parenthesis closes), and is drawn so, `stale` meanwhile. The window is cut as
        # drawn when it has the kept rows' widths; else on its finished rows alone.
        drawn = None
        if self._kept:
            drawn = self._drawn_rows(markdown)
            if markdown.widths == self._drawn:
                rows, measured = drawn
                tail = self._cut(markdown, rows, measured)
                self._rows = rows if tail is None else tail
                return
        finished = window[: window.rfind("\n") + 1]
        complete = markdown if finished == window else self._document(finished)
        rows, measured = (
            drawn if drawn is not None and complete is markdown else self._drawn_rows(complete)
        )
        if self._kept and complete.widths != self._drawn:
            if not self._widened():
                return
            self._drawn = complete.widths
        tail = self._cut(complete, rows, measured)
        if complete is markdown:
            self._rows = rows if tail is None else tail
            return
        if tail is not None:
            markdown = self._document(self._window)  # witnessed by the rows just kept
            drawn = self._drawn_rows(markdown)
        elif drawn is None:
            drawn = self._drawn_rows(markdown)
        self._rows = drawn[0]
        self._ragged = bool(self._kept) and markdown.widths != self._drawn

    def _document(self, window: str) -> LiveMarkdown:
        return LiveMarkdown(self._head + window, self._witness, measure=True)

    def _widened(self) -> bool:
        """The table's finished rows are drawn at other widths than the kept rows: draw it
        whole again (False: done), or, past `REDRAW_ROWS` kept rows, leave them `stale`."""
        if len(self._kept) <= REDRAW_ROWS:
            self.resize(self._draw)
            return False
        self._stale = True
        return True

    def _drawn_rows(self, markdown: LiveMarkdown) -> tuple[list[Strip], list[Measures]]:
        """The rows of a window (or its finished rows): the table's own from its top (the
        blank row above it, as Rich draws it after the part above), or its body rows from
        the cut on; and the measures of its body rows."""
        if not self._kept:
            text = markdown.markup
            rows, drawn = render_after(self._draw, text, self._before, measure=True)
            return rows, drawn.measured or []
        return self._body_rows(markdown), markdown.measured or []

    def _body_rows(self, markdown: LiveMarkdown) -> list[Strip]:
        """The rows of a document of the head and body rows witnessed by the rows above
        them, from its first body row on (its bottom edge included)."""
        rows = self._draw.render(markdown)
        top = self._prefix(_merged(markdown.witness, markdown.measured))
        return rows[top:-2] + rows[-1:]  # the witnesses' row is above the edge

    def _prefix(self, whole: Measures) -> int:
        """How many rows a window draws above its first body row (the blank row, the top
        edge, the head and the line under it): the head alone at these widths, less the
        witnesses' row and the bottom edge."""
        key = tuple(whole)
        rows = self._prefixes.get(key)
        if rows is None:
            rows = len(self._draw.render(LiveMarkdown(self._head, whole))) - 2
            self._prefixes[key] = rows
        return rows

    def _cut(
        self, markdown: LiveMarkdown, rows: list[Strip], measured: list[Measures]
    ) -> list[Strip] | None:
        """Keep the rows (`rows`, drawn from `markdown`: the window, or its finished rows)
        of its body rows but the last `KEEP_ROWS` when a cut before them is sure to hold
        (`measured`: the body rows' measures); give the rows left (None: no cut)."""
        body = [t for t in markdown.parsed if t.type == "tr_open"][1:]  # the head's first
        if len(body) <= KEEP_ROWS or len(measured) != len(body):
            return None
        line = body[-KEEP_ROWS].map
        assert line is not None
        at = line_offset(markdown.markup, line[0])
        witness = _merged(self._witness, measured[:-KEEP_ROWS])
        tail = LiveMarkdown(self._head + markdown.markup[at:], witness, measure=True)
        tops = blocks(tail)
        if len(tops) != 1 or tops[0].type != TABLE:
            return None
        tail_rows = self._body_rows(tail)
        kept = len(rows) - len(tail_rows)
        same = not self._kept or tail.widths == markdown.widths
        if not same or kept <= 0 or tail_rows != rows[kept:]:
            return None
        at -= len(self._head)
        self._kept.extend(rows[:kept])
        self._kept_text.append(self._window[:at])
        self._window = self._window[at:]
        self._witness, self._drawn = witness, tail.widths
        return tail_rows

    def resize(self, draw: Draw) -> None:
        """Draw at another width or style: the whole table once, then cut again."""
        self._draw = draw
        body = self.text[len(self._head) :]
        self._changed = 0
        self._kept, self._kept_text, self._rows = [], [], []
        self._witness, self._drawn, self._prefixes = None, [], {}
        self._stale = self._ragged = False
        if self.finished:
            self._window = body
            self._rows, _ = self._drawn_rows(self._document(body))
        else:
            self._window = ""
            self.feed(body)

    def lexer_built(self) -> None:
        """A table's cells hold no code blocks: nothing was drawn plain."""


def _merged(measures: Measures | None, rows: list[Measures] | None) -> Measures:
    """Per column, the widest narrowest width and the widest widest width of `measures`
    and of the rows' cells."""
    whole = list(measures or [])
    for row in rows or []:
        whole = [
            Measurement(max(a.minimum, b.minimum), max(a.maximum, b.maximum))
            for a, b in zip_longest(whole, row, fillvalue=Measurement(0, 0))
        ]
    return whole
