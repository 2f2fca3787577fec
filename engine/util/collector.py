"""One process-wide pause of the cyclic garbage collector, counted.

Bulk work (replay, record preparation, the summary request) allocates many
objects that all stay alive, so collecting them mid-way is pure overhead.
`gc.disable()` is a flag for the whole process, though, and these pauses
run on the UI loop and in worker threads at once: a save-and-restore of the
flag per caller lets one caller switch collection back on under another, or
restore "off" after everyone is done. Here every pause is counted under a
lock: the first one in switches collection off (if it was on), the last one
out switches it back on, and nothing else touches the flag meanwhile.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0
_restore = False
"""Collection was on when the first pause began, so the last one out turns it on."""


def hold() -> None:
    """Begin a pause; pair every call with exactly one `release`."""
    global _depth, _restore
    with _lock:
        if _depth == 0:
            _restore = gc.isenabled()
            gc.disable()
        _depth += 1


def release() -> None:
    """End a pause; the last one out turns collection back on if it was on."""
    global _depth
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth == 0 and _restore:
            gc.enable()


def holding() -> bool:
    """A pause is in progress (tests and start-up bookkeeping)."""
    with _lock:
        return _depth > 0


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Collection paused for the block, whatever other threads pause meanwhile."""
    hold()
    try:
        yield
    finally:
        release()
