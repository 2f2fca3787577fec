"""The streamed reply's rows: finished parts kept, the open part drawn again each frame.

Text is fed as it arrives (appending to a list) and read at the next frame
(`update`, from the widget's layout). The open tail, the blocks not finished
yet, is parsed each frame. Its finished blocks are kept as parts, drawn once,
when at least `FREEZE_CHARS` of them gathered (fewer parts, against a longer
tail per frame). A fenced code block is kept as its own part from its first
line on (`LiveCode`), as is a paragraph once it is `LONG_PARAGRAPH` long
(`LiveParagraph`), a list once it is `LONG_LIST` long (`LiveList`) and a table
once it is `LONG_TABLE` long (`LiveTable`): they read the text until their block
ends and hand back what follows. A part's rows
are the rows Rich draws for the whole reply there, blank rows between parts
included (finished blocks are drawn after a stand-in for the part above, see
`render_after`), so the rows are the reply's.

A code block may be lexed off the loop (`lexing`): it then shows the lines lexed
so far, and a frame takes the lines lexed since the last one (`update`).

`take_changed` says from which row on the rows may differ since it was last
asked (the rows above are kept parts, or the finished lines of the block being
streamed), so the widget repaints only those rows. A new width or style draws
every part again, once (a code block keeps its tokens). Languages whose lexer
is not built yet are drawn plain and listed in `wanted`; once the reply has
them built off the loop, `lexers_built` draws those parts again.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING, Protocol

from textual.strip import Strip

from tui.live.code import LiveCode
from tui.live.kept_window import KeptWindow
from tui.live.lexing import Lexing
from tui.live.list_items import LISTS, LiveList
from tui.live.markdown import (
    Draw,
    LiveMarkdown,
    blocks,
    has_image,
    line_offset,
    new_line_after,
    render_after,
)
from tui.live.paragraph import LiveParagraph
from tui.live.table_rows import TABLE, LiveTable

if TYPE_CHECKING:
    from markdown_it.token import Token

FREEZE_CHARS = 500
"""Finished text kept as a part at once."""
LONG_PARAGRAPH = 2000
"""Characters of an open paragraph from which its rows are kept as it grows."""
LONG_LIST = 2000
"""Characters of an open top-level list from which its items' rows are kept as it grows."""
LONG_TABLE = 2000
"""Characters of an open top-level table from which its body rows' rows are kept."""

BLANK = Strip([])
"""The row Rich puts between two blocks."""


class Part(Protocol):
    new_line: bool
    """Whether Rich puts a blank row after it (its last block's `new_line`)."""

    @property
    def height(self) -> int: ...

    def gap(self, before: bool | None) -> int:
        """Blank rows above it after a part whose `new_line` is `before` (None: first)."""
        ...

    def row(self, y: int) -> Strip: ...

    def resize(self, draw: Draw) -> None: ...

    def lexer_built(self) -> None: ...


class _Blocks:
    """Finished blocks drawn once as Rich draws them, the blank row above them included."""

    def __init__(self, draw: Draw, text: str, new_line: bool, before: bool | None) -> None:
        self.text = text
        self.new_line = new_line
        self._before = before
        self.resize(draw)

    @property
    def height(self) -> int:
        return len(self._rows)

    def gap(self, before: bool | None) -> int:
        return 0

    def row(self, y: int) -> Strip:
        return self._rows[y]

    def resize(self, draw: Draw) -> None:
        self._draw = draw
        self._rows, drawn = render_after(draw, self.text, self._before)
        self.wanted = drawn.wanted

    def lexer_built(self) -> None:
        if self.wanted:
            self.resize(self._draw)


class LiveReply:
    """A streamed reply's rows at one width and style; its code is lexed by `lexing`."""

    def __init__(self, draw: Draw, lexing: Lexing | None = None) -> None:
        self._draw = draw
        self._lexing = lexing
        self._fed: list[str] = []
        self._pending: list[str] = []
        self.parts: list[Part] = []
        self._starts: list[int] = []
        """Each kept part's first row."""
        self._kept_height = 0
        self._open = ""
        """The open tail's text (while no part reads the block being streamed)."""
        self._open_rows: list[Strip] = []
        self._open_wanted: set[str] = set()
        self._mode: LiveCode | LiveParagraph | LiveList | LiveTable | None = None
        """The part reading the block being streamed."""
        self._changed: int | None = None
        """The first row that may differ since `take_changed` (None: none does)."""
        self._relexing: list[LiveCode] = []
        """Kept code blocks being lexed again off the loop (their lexer was built)."""

    @property
    def draw(self) -> Draw:
        return self._draw

    @property
    def text(self) -> str:
        """Everything fed so far (joined on demand: feeding must not copy the reply)."""
        if len(self._fed) > 1:
            self._fed = ["".join(self._fed)]
        return self._fed[0] if self._fed else ""

    @property
    def open_text(self) -> str:
        """The text not kept yet: the open tail, or the block being streamed, and the text
        fed that the next `update` reads."""
        read = self._mode.text if self._mode is not None else self._open
        return read + "".join(self._pending)

    def feed(self, text: str) -> None:
        """Text just written; read at the next `update`."""
        if text:
            self._fed.append(text)
            self._pending.append(text)

    @property
    def lexing(self) -> bool:
        """Code is being lexed off the loop: not all of it is shown yet."""
        code = [*self._relexing, self._mode]
        return any(isinstance(part, LiveCode) and part.lexing for part in code)

    def lex_now(self) -> None:
        """The reply has ended: its code is lexed on the caller's turn from now on, what is
        out or waiting included, so the next `update` reads every line."""
        self._lexing = None
        for part in (*self._relexing, self._mode):
            if isinstance(part, LiveCode):
                part.lex_now()

    def update(self) -> bool:
        """Read what was fed since the last frame, and take the code lexed since (the
        frame's work); False: there was neither."""
        relexed = self._take_relexed()
        if not self._pending and not (isinstance(self._mode, LiveCode) and self._mode.relexed):
            return relexed
        text = "".join(self._pending)
        self._pending.clear()
        self._read(text)
        return True

    def take_changed(self) -> int | None:
        """The first row that may look different since the last call (None: no row does)."""
        changed, self._changed = self._changed, None
        return changed

    def _mark(self, row: int) -> None:
        self._changed = row if self._changed is None else min(self._changed, row)

    @property
    def height(self) -> int:
        mode = self._mode
        if mode is None:
            return self._kept_height + len(self._open_rows)
        return self._kept_height + mode.gap(self._before) + mode.height

    def row(self, y: int) -> Strip:
        if y < self._kept_height:
            i = bisect_right(self._starts, y) - 1
            if i < 0:
                return BLANK
            part, at = self.parts[i], y - self._starts[i]
            return part.row(at) if 0 <= at < part.height else BLANK
        y -= self._kept_height
        mode = self._mode
        if mode is None:
            return self._open_rows[y] if y < len(self._open_rows) else BLANK
        y -= mode.gap(self._before)
        return mode.row(y) if 0 <= y < mode.height else BLANK

    @property
    def _before(self) -> bool | None:
        return self.parts[-1].new_line if self.parts else None

    def _read(self, text: str) -> None:
        while True:
            mode = self._mode
            if mode is None:
                self._open += text
                self._mark(self._kept_height)  # the open tail is drawn again below it
                if not self._read_open():
                    return
                text = ""
                continue
            if text:
                mode.feed(text)
            if isinstance(mode, LiveCode):
                mode.take_lexed()
            self._mark(self._kept_height + mode.gap(self._before) + mode.take_changed())
            if isinstance(mode, KeptWindow) and mode.broken:
                self._mode, text = None, mode.text
            elif mode.finished:
                self._mode, text = None, mode.rest
                self._keep(mode)
            else:
                return

    def _read_open(self) -> bool:
        """Parse the open tail: keep its finished blocks, or hand its last block to a part
        of its own (True: a part took the text, read on)."""
        text = self._open
        markdown = LiveMarkdown(text)
        tops = blocks(markdown)
        for i, block in enumerate(tops):
            assert block.map is not None
            start = line_offset(text, block.map[0])
            if block.type == "fence" and "\n" in text[start:]:
                self._keep_text(text[:start], tops[:i])
                opener, _, body = text[start:].partition("\n")
                language, theme = _code_block(markdown, block)
                self._open = ""
                self._mode = LiveCode(self._draw, opener, language, theme, body, self._lexing)
                return True
        if tops:
            last = tops[-1]
            assert last.map is not None
            start = line_offset(text, last.map[0])
            long = len(text) - start >= LONG_PARAGRAPH
            if last.type == "paragraph_open" and long and not has_image(markdown, last):
                self._keep_text(text[:start], tops[:-1])
                self._open = ""
                self._mode = LiveParagraph(self._draw, text[start:])
                return True
            long_list = last.type in LISTS and len(text) - start >= LONG_LIST
            long_table = last.type == TABLE and len(text) - start >= LONG_TABLE
            if long_list or long_table:
                before = new_line_after(tops[-2]) if len(tops) > 1 else self._before
                kind = LiveList if long_list else LiveTable
                live = kind(self._draw, text[start:], before)
                if not live.broken:
                    self._keep_text(text[:start], tops[:-1])
                    self._open = ""
                    self._mode = live
                    return True
            if start >= FREEZE_CHARS:
                self._keep_text(text[:start], tops[:-1])
                self._open = text[start:]
        self._draw_open()
        return False

    def _draw_open(self) -> None:
        if self._open.strip():
            self._open_rows, drawn = render_after(self._draw, self._open, self._before)
            self._open_wanted = drawn.wanted
        else:
            self._open_rows, self._open_wanted = [], set()

    def _keep_text(self, text: str, tops: list[Token]) -> None:
        if tops:
            self._keep(_Blocks(self._draw, text, new_line_after(tops[-1]), self._before))

    def _keep(self, part: Part) -> None:
        self.parts.append(part)
        self._place(len(self.parts) - 1)

    def _take_relexed(self) -> bool:
        """Show the kept code blocks lexed again since the last frame (False: none was)."""
        taken = [part for part in self._relexing if part.relexed]
        for part in taken:
            part.take_lexed()
            self._mark(self._starts[self.parts.index(part)])
        self._relexing = [part for part in self._relexing if part.lexing]
        if taken:
            self._place(0)
        return bool(taken)

    def _place(self, first: int) -> None:
        """Where each part from `first` on starts (after the blank rows above it)."""
        del self._starts[first:]
        at = self._starts[-1] + self.parts[first - 1].height if first else 0
        for i in range(first, len(self.parts)):
            before = self.parts[i - 1].new_line if i else None
            at += self.parts[i].gap(before)
            self._starts.append(at)
            at += self.parts[i].height
        self._kept_height = at

    def resize(self, draw: Draw) -> None:
        """Draw everything again at another width or style (once)."""
        self._draw = draw
        self._mark(0)
        for part in self.parts:
            part.resize(draw)
        self._place(0)
        if self._mode is not None:
            self._mode.resize(draw)
        else:
            self._draw_open()

    @property
    def stale(self) -> bool:
        """Whether some rows are not the rows Rich draws for the reply (a long numbered
        list's kept items, its numbers grown a digit since; a long table's kept rows, its
        columns widened since): it is drawn whole at its end."""
        parts = (*self.parts, self._mode)
        return any(isinstance(part, (LiveList, LiveTable)) and part.stale for part in parts)

    @property
    def wanted(self) -> set[str]:
        """The languages drawn plain while their lexer is not built."""
        names = set(self._open_wanted)
        for part in (*self.parts, self._mode):
            if isinstance(part, LiveCode) and part.waiting:
                names.add(part.language)
            elif isinstance(part, (_Blocks, LiveList)):
                names |= part.wanted
        return names

    def lexers_built(self) -> None:
        """Some lexers were built: draw again what was drawn plain for want of them."""
        self._mark(0)
        for part in self.parts:
            part.lexer_built()
            if isinstance(part, LiveCode):
                part.take_lexed()  # lexed already, unless off the loop
                if part.lexing:
                    self._relexing.append(part)
        self._place(0)
        if self._mode is not None:
            self._mode.lexer_built()
            if isinstance(self._mode, LiveCode):
                self._mode.take_lexed()  # lexed already, unless off the loop
        elif self._open_wanted:
            self._draw_open()


def _code_block(markdown: LiveMarkdown, token: Token) -> tuple[str, str]:
    """The language and theme Rich's code block takes from a fence."""
    block = LiveMarkdown.elements["fence"].create(markdown, token)
    return block.lexer_name, block.theme  # type: ignore[attr-defined]
