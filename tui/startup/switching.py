"""How long a thread running Python keeps the GIL once another asks for it: short while
the app starts, and while the UI's own workers draw or read in threads.

Just after start-up, worker threads run a lot of Python: the model SDK's import (paid
then, or as the first prompt is sent), the parser and lexers the first reply draws
with. Scrolling back, a thread reads the log's events and draws the replies mounted
next. Meanwhile each wake of the UI loop (a key, a timer, a read) waits for the GIL up
to the switch interval, Python's 5 ms by default: several waits per keystroke's echo.
So the interval is `SHORT` while start-up work runs (until `settled`) and while a
worker holds `short_while`; otherwise the interval the process had. Not for good: with
busy threads gone, a shorter interval only adds hand-offs, and on a loaded machine each
can wait for the other thread to be scheduled (a fast stream was read measurably later,
and a streamed code block's lexing thread keeps the default). bench/content.py and
bench/scroll.py measure both. A process-wide choice, so the front end makes it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

SHORT = 0.001
"""Seconds, while start-up work or a UI worker runs in a thread."""
START_UP = SHORT

_found: float | None = None
"""The interval the process had, while a shorter one is set."""
_starting = False
_workers = 0


def _apply() -> None:
    global _found
    short = _starting or _workers > 0
    if short and _found is None:
        _found = sys.getswitchinterval()
        sys.setswitchinterval(SHORT)
    elif not short and _found is not None:
        sys.setswitchinterval(_found)
        _found = None


def starting() -> None:
    """The app starts: the short interval until `settled`."""
    global _starting
    _starting = True
    _apply()


def settled() -> None:
    """Start-up's threads are done: the interval the process had, unless a worker holds
    the short one. Idempotent."""
    global _starting
    _starting = False
    _apply()


@contextmanager
def short_while() -> Iterator[None]:
    """The short interval while the block runs (a UI worker in a thread); held by
    several at once, it ends with the last."""
    global _workers
    _workers += 1
    _apply()
    try:
        yield
    finally:
        _workers -= 1
        _apply()
