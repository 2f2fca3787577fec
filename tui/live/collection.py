"""No full garbage collection while a reply streams; the thresholds come back after.

A full (oldest-generation) collection walks every tracked object the app made
since it froze its long-lived ones, and a reply streaming makes many (rows,
strips, tokens): one lands mid-stream now and then and holds the UI loop for
tens of milliseconds, a key's echo with it. While any reply streams, the
oldest generation's threshold is set out of reach (the young generations
still collect, so short-lived cycles do not pile up); when the last reply
ends it is put back, and the next full collection runs when it falls due,
between replies. The chat screen holds it for a whole turn as well (its
request, whose first one imports and builds the model client, then its
reply); each reply holds it until its final rows are in.
"""

from __future__ import annotations

import gc

OUT_OF_REACH = 1_000_000
"""The oldest generation's threshold while a reply streams (young passes before one)."""

_holders = 0
_saved: int | None = None
"""The oldest generation's threshold before the first hold."""


def hold_full() -> None:
    """A reply starts streaming; pair with exactly one `release_full` (on the UI loop)."""
    global _holders, _saved
    if _holders == 0:
        young, middle, oldest = gc.get_threshold()
        _saved = oldest
        gc.set_threshold(young, middle, OUT_OF_REACH)
    _holders += 1


def release_full() -> None:
    """A reply has ended; the last one out restores the oldest generation's threshold."""
    global _holders, _saved
    if _holders == 0:
        return
    _holders -= 1
    if _holders == 0 and _saved is not None:
        young, middle, _ = gc.get_threshold()
        gc.set_threshold(young, middle, _saved)
        _saved = None


def holding() -> bool:
    """Whether full collections are held (a reply streams)."""
    return _holders > 0
