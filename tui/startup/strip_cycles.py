"""Textual's `Strip` without the caches that hold the strip itself.

A strip memoizes its derived strips (padded, cropped, divided) in caches of
its own, and when the answer is the strip unchanged (already the length
asked for, cut nowhere) it stores itself: a reference cycle. Such a strip is
not freed when the last line holding it goes; it waits, with its seven
caches and its segments, for a full collection. Every line drawn is such a
strip, so scrolling a long thread (old lines dropped by the thousand) left
most of what each full collection walked, and the walk held the UI loop
(`bench/scroll.py`). Here the three methods answer those cases before their
cache is consulted: the same strip, and nothing stored.
A process-wide choice, so the front end makes it, once, before the app starts.
"""

from __future__ import annotations

from typing import Any

from textual.strip import Strip

_installed = False


def install() -> None:
    """Idempotent: the first call wraps the methods."""
    global _installed
    if _installed:
        return
    _installed = True
    extend_cell_length = Strip.extend_cell_length
    crop_extend = Strip.crop_extend
    divide = Strip.divide

    def extend_unless_same(self: Strip, cell_length: int, style: Any = None) -> Strip:
        if cell_length == self.cell_length:
            return self
        return extend_cell_length(self, cell_length, style)

    def crop_extend_unless_same(self: Strip, start: int, end: int, style: Any) -> Strip:
        if start <= 0 and end == self.cell_length:
            return self
        return crop_extend(self, start, end, style)

    def divide_unless_whole(self: Strip, cuts: Any) -> Any:
        cuts = list(cuts)
        length = self.cell_length
        if [cut for cut in cuts if cut <= length] == [length]:
            return [self]
        return divide(self, cuts)

    Strip.extend_cell_length = extend_unless_same  # type: ignore[method-assign]
    Strip.crop_extend = crop_extend_unless_same  # type: ignore[method-assign]
    Strip.divide = divide_unless_whole  # type: ignore[method-assign]
