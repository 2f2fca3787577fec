"""Textual's `Strip` with its memo caches made on first use, not as it is built.

Every drawn line is a `Strip`, and each one built seven caches of the strips
derived from it (cropped, styled, divided…), though most lines are never
asked for any. Each cache is an object the cyclic collector tracks: a line
cost eight where one would do, the young generation filled and was walked
eight times as often, and the caches were about a quarter of what a full
collection walked while scrolling back (`bench/scroll.py`). Here a strip is
built with none, and each method that fills one makes it first if it is
missing (as Textual's own `Content` makes its divide cache). Only those
methods are wrapped: a `__getattr__` on `Strip` would slow every attribute
read of every line. A process-wide choice, made by the front end before the
app starts; if `Strip` is not the one known here, Textual's own stays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rich.segment import Segment
from textual.cache import FIFOCache
from textual.strip import Strip

FIELDS = {"_segments", "_cell_length", "_render_cache", "_link_ids", "_cell_count"}
"""`Strip`'s fields other than its caches, set as Textual's own `__init__` sets them."""
FILLS = {
    "adjust_cell_length": "_line_length_cache",
    "apply_filter": "_filter_cache",
    "crop_extend": "_crop_extend_cache",
    "crop": "_crop_cache",
    "divide": "_divide_cache",
    "apply_style": "_style_cache",
    "apply_offsets": "_offsets_cache",
}
"""Each method of `Strip` that reads and fills a cache, and that cache."""

_original_init = Strip.__init__
"""Textual's own, as it was when this module was imported."""
_installed = False


def _build(self: Strip, segments: Iterable[Segment], cell_length: int | None = None) -> None:
    self._segments = list(segments)
    self._cell_length = cell_length
    self._render_cache = None
    self._link_ids = None
    self._cell_count = None


def _with_cache(method: Callable[..., Any], name: str, size: int) -> Callable[..., Any]:
    """`method`, with the strip's cache `name` made first when it has none yet."""
    slot = vars(Strip)[name]  # the member descriptor of that slot
    get, put = slot.__get__, slot.__set__

    def wrapped(self: Strip, *args: Any, **kwargs: Any) -> Any:
        try:
            get(self)
        except AttributeError:
            put(self, FIFOCache(size))
        return method(self, *args, **kwargs)

    wrapped.__name__ = method.__name__
    wrapped.__doc__ = method.__doc__
    wrapped.__wrapped__ = method  # type: ignore[attr-defined]
    return wrapped


def install() -> bool:
    """Idempotent; False (and nothing changed) when `Strip` is not the one known here."""
    global _installed
    if _installed:
        return True
    probe = Strip([])
    sizes = {
        name: cache._maxsize
        for name in Strip.__slots__
        if isinstance(cache := getattr(probe, name, None), FIFOCache)
    }
    known = set(Strip.__slots__) == FIELDS | set(sizes) and set(FILLS.values()) == set(sizes)
    if not known or not all(callable(getattr(Strip, method, None)) for method in FILLS):
        return False
    for method, name in FILLS.items():
        setattr(Strip, method, _with_cache(getattr(Strip, method), name, sizes[name]))
    Strip.__init__ = _build  # type: ignore[method-assign]
    _installed = True
    return True
