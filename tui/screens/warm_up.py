"""The work that follows a thread's first frame instead of holding it up.

Once a thread is shown: its continuity is wired (the archive, tools and notes;
a request or compaction that comes first wires it itself; a worker thread has
imported its modules by then), the lexers of the
code drawn plain at start-up are built off the loop and that code is drawn
again (tui.code_lexers), what the first streamed reply draws with (its widget,
Rich's Markdown, markdown-it, the lexers of the languages most often fenced)
is imported and built in a worker thread rather than on the loop as the
first reply arrives (the thread its code is lexed in started), and the model
client's import is paid before the first prompt needs it, after the first
frames: the import competes for the GIL.
"""

from __future__ import annotations

from functools import partial
from typing import Any
from weakref import WeakSet

from textual.screen import Screen
from textual.worker import Worker

from engine.runtime import Runtime
from tui import code_lexers
from tui.startup import switching
from tui.startup.collection import freeze_long_lived
from tui.widgets.chat_message import PastReply

WARM_AFTER = 1.0
"""Seconds after a thread opens before the model client's import is paid."""
COMPLETE_AFTER = 0.1
"""Seconds after the thread's first frame before its continuity is wired."""

_warmed: WeakSet[Screen[Any]] = WeakSet()
"""Screens whose warm-up has run to its end."""


def warm_up(screen: Screen[Any], runtime: Runtime) -> None:
    """Start what follows `runtime`'s first frame on `screen`, which shows it."""
    screen.call_after_refresh(lambda: screen.set_timer(COMPLETE_AFTER, runtime.complete))
    screen.call_after_refresh(partial(_prepare, screen))
    if code_lexers.deferring():
        screen.call_after_refresh(
            lambda: screen.set_timer(COMPLETE_AFTER, partial(_highlight, screen), name="lexers")
        )
    screen.set_timer(WARM_AFTER, partial(_start_warm, screen, runtime))


def warmed(screen: Screen[Any]) -> bool:
    """Whether the warm-up on `screen` has ended (start-up's last change); the app runs no
    full collection before (tui.live.collection)."""
    return screen in _warmed


def _prepare(screen: Screen[Any]) -> None:
    screen.run_worker(prepare_first_turn, group="warm", thread=True, exit_on_error=False)


def prepare_first_turn() -> None:
    """In a worker thread: import what wiring continuity needs (the first request, or
    `runtime.complete` 0.1 s on, would import it on the loop), then set up what the first
    streamed reply draws with."""
    import engine.continuity  # noqa: F401  (imported is the point)
    import engine.continuity.capture  # noqa: F401
    from tui.live import lexing
    from tui.live.markdown import LiveMarkdown
    from tui.widgets import assistant_message  # noqa: F401  (imported is the point)

    LiveMarkdown("`x` *y*\n\n```\nz\n```\n")  # the parser, made once, and its rules
    code_lexers.build_common()
    lexing.start()  # the thread a streamed code block is lexed in


def _highlight(screen: Screen[Any]) -> None:
    screen.run_worker(
        partial(_build_lexers, screen), group="lexers", thread=True, exit_on_error=False
    )


def _build_lexers(screen: Screen[Any]) -> None:
    """In a worker thread: build the wanted lexers, then draw that code again on the loop."""
    try:
        code_lexers.build_wanted()
    finally:
        screen.app.call_from_thread(_highlighted, screen)


def _highlighted(screen: Screen[Any]) -> None:
    code_lexers.finish()
    for reply in screen.query(PastReply):
        if reply.plain_code:
            reply.refresh(layout=True)


def _start_warm(screen: Screen[Any], runtime: Runtime) -> Worker[None]:
    async def warm() -> None:
        """Pay the model client's import before the first prompt, not on it; then freeze
        what lives as long as the app (tui.startup.collection) and give the GIL's switch
        interval back (tui.startup.switching)."""
        try:
            await runtime.model.prepare()
            freeze_long_lived()
            switching.settled()
        finally:
            _warmed.add(screen)  # ended, however: full collections may run again

    # The coroutine is made as the worker starts: one a quit cancels first leaves none
    # unawaited.
    return screen.run_worker(warm, group="warm", exit_on_error=False)
