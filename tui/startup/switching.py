"""How long a thread running Python keeps the GIL once another asks for it, while the
app starts.

Just after start-up, worker threads run a lot of Python: the model SDK's import (paid
then, or as the first prompt is sent), the parser and lexers the first reply draws
with. Meanwhile each wake of the UI loop (a key, a timer, a read) waits for the GIL up
to the switch interval, Python's 5 ms by default: several waits per keystroke's echo.
So the app starts with `START_UP` and goes back to the interval it found once that work
is done (`settled`). Not for good: with busy threads gone, a shorter interval only adds
hand-offs, and on a loaded machine each can wait for the other thread to be scheduled
(a fast stream was read measurably later). bench/content.py measures both.
A process-wide choice, so the front end makes it, once.
"""

from __future__ import annotations

import sys

START_UP = 0.001
"""Seconds, while start-up work runs in threads."""

_found: float | None = None


def starting() -> None:
    """The app starts: the short interval until `settled`."""
    global _found
    if _found is None:
        _found = sys.getswitchinterval()
    sys.setswitchinterval(START_UP)


def settled() -> None:
    """Start-up's threads are done: the interval the process had. Idempotent."""
    global _found
    if _found is not None:
        sys.setswitchinterval(_found)
        _found = None
