"""Full garbage collections at quiet moments: never while a reply streams, nor as a key
arrives, when that can wait.

A full (oldest-generation) collection walks every tracked object the app made
since it froze its long-lived ones: in a long session tens of milliseconds
on the UI loop, and a key pressed meanwhile echoes that much later. Left to
the collector, one falls due wherever allocation happens to tip it: mid-stream,
at a turn's end while the user types, while PageUp is held. So while an app
runs, the oldest generation's threshold is out of reach (the young
generations still collect, so short-lived cycles do not pile up) and the app
asks, a few times a second, for the full collection that has fallen due
(`collect_when_quiet`): it runs once no key has arrived for `QUIET` and no
reply streams; one overdue `OVERDUE` times over runs even while keys arrive,
so memory stays bounded for someone who never stops typing.

Replies and turns hold full collections off while they stream (`hold_full`):
none runs then, however overdue. When the last holder and the last app let go,
the threshold comes back.
"""

from __future__ import annotations

import gc

from engine.util import collector

OUT_OF_REACH = 1_000_000
"""The oldest generation's threshold while it is held or kept for quiet moments."""
QUIET = 0.3
"""Seconds without a key after which a full collection that fell due runs."""
OVERDUE = 2
"""A full collection due this many times over runs even while keys arrive."""
CHECK = 0.1
"""Seconds between an app's checks for a full collection to run."""

_holders = 0
"""Replies and turns streaming: no full collection at all."""
_keepers = 0
"""Apps that run full collections themselves, at quiet moments."""
_saved: int | None = None
"""The oldest generation's threshold before it was put out of reach."""


def _apply() -> None:
    global _saved
    young, middle, oldest = gc.get_threshold()
    if _holders or _keepers:
        if _saved is None:
            _saved = oldest
            gc.set_threshold(young, middle, OUT_OF_REACH)
    elif _saved is not None:
        gc.set_threshold(young, middle, _saved)
        _saved = None


def hold_full() -> None:
    """A reply starts streaming; pair with exactly one `release_full` (on the UI loop)."""
    global _holders
    _holders += 1
    _apply()


def release_full() -> None:
    """A reply has ended; the last one out (with no app keeping them) restores the threshold."""
    global _holders
    if _holders == 0:
        return
    _holders -= 1
    _apply()


def holding() -> bool:
    """Whether full collections are held (a reply streams)."""
    return _holders > 0


def keep_full() -> None:
    """An app starts running full collections at quiet moments; pair with `let_go_full`."""
    global _keepers
    _keepers += 1
    _apply()


def let_go_full() -> None:
    """The app has ended: the last one out (with no hold left) restores the threshold."""
    global _keepers
    if _keepers == 0:
        return
    _keepers -= 1
    _apply()


def due() -> int:
    """How many times over a full collection is due: the collections of the middle
    generation since the last full one, against the threshold set aside (0: none kept)."""
    if _saved is None:
        return 0
    return gc.get_count()[2] // max(1, _saved)


def collect_when_quiet(since_key: float) -> bool:
    """Run the full collection that fell due, if now is the moment: nothing streams, no
    other pause of the collector runs (bulk work), and no key came for `QUIET` seconds
    (`since_key`) unless it is `OVERDUE`. True when one ran."""
    if _holders or collector.holding():
        return False
    times = due()
    if times == 0 or (since_key < QUIET and times < OVERDUE):
        return False
    gc.collect()
    return True
