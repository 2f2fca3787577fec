"""Textual's geometry memo caches, bounded smaller for the life of the app.

Textual memoizes `Region`'s arithmetic (intersection, union, grow, …) in
`functools.lru_cache`s of up to 4,096 entries each. Every entry keeps its key
tuple and its result, and a `Region` is a named tuple, which the cyclic
collector tracks for good: scrolling a long transcript fills these caches with
one-off regions, and they become most of the objects each full collection walks
(the slowest frames while PageUp is held; `bench/scroll.py`). A miss costs a
few tuple operations, so each cache is re-made with a small bound instead.
A process-wide choice, so the front end makes it, once, before the app starts.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

BOUND = 256
"""Entries each of `Region`'s memo caches keeps (Textual's own: 1,024 or 4,096)."""

_bounded = False


def bound_geometry_caches(bound: int = BOUND) -> None:
    """Re-make each lru-cached method of Textual's `Region` with at most `bound` entries.

    Idempotent: the first call decides. A method Textual stops caching is left as it is.
    """
    global _bounded
    if _bounded:
        return
    _bounded = True
    from textual.geometry import Region

    for name, member in list(vars(Region).items()):
        wrapped = _cached_function(member)
        if wrapped is not None:
            setattr(Region, name, lru_cache(maxsize=bound)(wrapped))


def _cached_function(member: Any) -> Any:
    """The function an `lru_cache` wraps, or None if `member` is not one."""
    if callable(getattr(member, "cache_info", None)) and hasattr(member, "__wrapped__"):
        return member.__wrapped__
    return None
