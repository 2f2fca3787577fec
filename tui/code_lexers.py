"""Pygments lexers for replayed replies, built off the UI loop: until then code is drawn plain.

Pygments builds a lexer's class the first time one is made, compiling its
regexes, paid by whichever frame first draws a ```python block. On a resumed
thread that frame is the first one, so the user waited for colours before
they could type. While the app defers (`defer()`, from its start until
`finish()`), a block whose lexer is not built yet is drawn as plain text in
the same box (the same lines, so the layout does not move) and its lexer name
is noted; the chat screen builds the noted lexers in a worker thread after
its first frames (`build_wanted`, tui.screens.warm_up), then
`finish()` bumps `generation` and the replies that drew a plain block draw
again, highlighted. After that every block is highlighted as it is drawn,
as Rich does, except in the reply being streamed: it asks `built` and has
`build` run in a worker thread for a language it has not seen yet.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable

_built: set[str] = {"text"}
"""Lexer names (lower case) whose Pygments class is built, or that name none."""
_wanted: set[str] = set()
_deferring = False
generation = 0
"""Bumped by `finish()`: a reply that drew a plain block draws again when it changes."""
plain_drawn = 0
"""How many blocks were drawn plain: a reply compares it around its own drawing."""
_building = threading.Lock()
"""One build at a time: two worker threads compiling lexers at once only share the GIL
with the UI loop in more, smaller slices, and may compile the same class twice."""
builds = 0
"""Lexers built so far (tests count them)."""

COMMON = (
    "python", "javascript", "typescript", "bash", "json", "rust", "go", "java", "c", "cpp",
    "html", "css", "sql", "yaml", "diff",
)  # fmt: skip
"""Languages replies fence most often: built at warm-up, so a live reply's first block in
one of them is highlighted from its first line, and a short reply's last frame is its final
look (a block drawn plain would change colour only once its lexer is built)."""


def defer() -> None:
    """From now until `finish()`, a block whose lexer is not built is drawn plain."""
    global _deferring
    _deferring = True


def deferring() -> bool:
    return _deferring


def waits_for(name: str) -> bool:
    """Whether a block of this language is drawn plain now; notes it for `build_wanted`."""
    global plain_drawn
    name = name.lower()
    if not _deferring or name in _built:
        return False
    _wanted.add(name)
    plain_drawn += 1
    return True


def built(name: str) -> bool:
    """Whether the lexer of this language is built (or there is none to build)."""
    return name.lower() in _built


def build(names: Iterable[str]) -> None:
    """Build these languages' lexers (in a worker thread: it holds no UI state)."""
    global builds
    from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped]
    from pygments.util import ClassNotFound  # type: ignore[import-untyped]

    with _building:
        for name in sorted({n.lower() for n in names} - _built):
            with contextlib.suppress(ClassNotFound):  # Rich draws an unknown language plain
                get_lexer_by_name(name)  # the class's rules are compiled on the first instance
            builds += 1
            _built.add(name)


def build_common() -> None:
    """Build the `COMMON` lexers one at a time (in a worker thread): each takes the lock
    alone, so a live reply's own build waits for one lexer at most."""
    for name in COMMON:
        build([name])


def build_wanted() -> None:
    """Build the lexers plain blocks asked for (in a worker thread: it holds no UI state)."""
    build(_wanted.copy())  # one C call: the loop may add to it meanwhile


def finish() -> None:
    """Stop deferring (on the UI loop); replies with plain blocks then draw them again."""
    global _deferring, generation
    if _deferring:
        _deferring = False
        generation += 1
