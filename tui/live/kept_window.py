"""What a long block being streamed keeps: the rows that can no longer change, and a
window of its text from the last cut on, drawn again each frame (a paragraph's last
rows, a list's last items). The block says where it may cut (`LiveParagraph`,
`LiveList`); the bookkeeping of kept rows and window is here, shared."""

from __future__ import annotations

from textual.strip import Strip

from tui.live.markdown import Draw


class KeptWindow:
    """Kept rows and their text, then the window's; `finished` once the block ended (the
    text after it in `rest`), `broken` once it turned into something else."""

    new_line = True

    def __init__(self, draw: Draw) -> None:
        self._draw = draw
        self._kept: list[Strip] = []
        self._kept_text: list[str] = []
        self._window = ""
        self._rows: list[Strip] = []
        self.finished = False
        self.broken = False
        self.rest = ""
        self._changed = 0
        """The first row that may differ since `take_changed`."""

    @property
    def text(self) -> str:
        """The block's Markdown source fed so far."""
        return "".join(self._kept_text) + self._window

    @property
    def height(self) -> int:
        return len(self._kept) + len(self._rows)

    def row(self, y: int) -> Strip:
        kept = len(self._kept)
        return self._kept[y] if y < kept else self._rows[y - kept]

    def take_changed(self) -> int:
        """The first row that may differ since the last call: the window's, on."""
        changed, self._changed = self._changed, self.height
        return changed
