"""What the four inspector tabs share: the thread's context and off-loop reads.

A tab never touches SQLite on the event loop. `fetch` takes the snapshot on
the loop (a cheap copy of the log position) and runs the blocking read in a
thread. Each tab runs its reads in exclusive worker groups, so a newer
request cancels the wait for an older one; a read that still finishes is
dropped when the tab was re-bound to another thread meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from textual.containers import Vertical
from textual.content import Content

from engine.continuity import ContinuityContext, Snapshot
from engine.util.safe_text import safe_text

T = TypeVar("T")


class Stale(Exception):
    """The result belongs to a thread (or context) the tab no longer shows."""


class InspectorTab(Vertical):
    """Base of the tabs: holds the continuity context the inspector hands down."""

    DEFAULT_CSS = """
    InspectorTab {
        height: 1fr;
    }
    InspectorTab .status {
        height: auto;
        padding: 0 0 1 0;
    }
    InspectorTab .hint {
        height: auto;
        color: $text-muted;
    }
    InspectorTab OptionList {
        height: 1fr;
        border: none;
        padding: 0;
        background: transparent;
        scrollbar-size-vertical: 1;
    }
    InspectorTab OptionList:focus {
        border: none;
        background-tint: $foreground 5%;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.context: ContinuityContext | None = None
        self.home: Path | None = None
        """The data directory of the open thread (for reading the user's other threads)."""

    def set_context(self, context: ContinuityContext | None) -> None:
        """A new thread (or none): drop what is shown and any read still in flight."""
        self.workers.cancel_node(self)
        self.context = context
        if self.is_mounted:  # before mounting there is nothing to clear
            self.reset()

    def reset(self) -> None:
        """Forget the previous thread's data (subclasses clear their widgets)."""

    def reload(self) -> None:
        """Read fresh data for what the tab shows (subclasses start a worker)."""

    def focus_default(self) -> None:
        """Put focus where the user most likely wants to type or move next."""

    async def fetch(self, read: Callable[..., T], *args: Any) -> T:
        """`read(snapshot, *args)` in a thread; raises Stale when the context changed."""
        context = self.context
        if context is None:
            raise Stale
        snapshot: Snapshot = context.snapshot()
        result = await asyncio.to_thread(read, snapshot, *args)
        if self.context is not context:
            raise Stale
        return result

    async def fetch_across(self, read: Callable[..., T], *args: Any) -> T:
        """`read(home, user_id, *args)` in a thread, over the user's threads (not this
        context's snapshot); raises Stale when the context changed meanwhile."""
        context, home = self.context, self.home
        if context is None or home is None:
            raise Stale
        result = await asyncio.to_thread(read, home, context.user_id, *args)
        if self.context is not context:
            raise Stale
        return result

    @staticmethod
    def failure(what: str, exc: BaseException) -> Content:
        """An unexpected read error as a plain sentence, never a traceback."""
        return Content.assemble(
            (f"Could not {what}: ", "bold $text-error"),
            (safe_text(str(exc)) or type(exc).__name__, "$text-error"),
        )
