"""A thread's task continuity as the runtime holds it: built the first time it is asked for.

Importing the continuity package is a good part of a launch, and a front end's
first frame needs none of it. So the driver (as its Extension) and the
compaction service (as its capture) are given this object when they are
constructed, and the first request, capture or reader builds what it stands for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from engine.config import Config
from engine.driver import ContextBuilder
from engine.model.tools import Tool
from engine.surface import Entry, Message, Surface
from engine.threads.thread import Thread

if TYPE_CHECKING:
    from engine.continuity import ContinuityContext
    from engine.continuity.capture import Capture


class _Built(Struct, frozen=True):
    context: ContinuityContext
    capture: Capture
    tools: Sequence[Tool] = ()
    instructions: str = ""
    builder: ContextBuilder | None = None


class ThreadContinuity:
    """The archive (a capture on every compaction) and the notes; with tools offered,
    the three history tools, the authority contract and the notebook in every request."""

    def __init__(self, config: Config, thread: Thread, surface: Surface, *, tools: bool) -> None:
        self._config = config
        self._thread = thread
        self._surface = surface
        self._offer_tools = tools
        self._built: _Built | None = None
        self._closed = False

    @property
    def built(self) -> bool:
        return self._built is not None

    def complete(self) -> None:
        """Build it now, if it is not built yet and not closed."""
        self._build()

    def context(self) -> ContinuityContext | None:
        """The thread's continuity context, built if need be (None: closed unbuilt)."""
        built = self._build()
        return built.context if built is not None else None

    def _build(self) -> _Built | None:
        if self._built is None and not self._closed:
            self._built = self._make()
        return self._built

    def _make(self) -> _Built:
        from engine.continuity import ArchiveStore, ContinuityContext, archive_path, scope_binding
        from engine.continuity.capture import capture_hook

        thread = self._thread
        store = ArchiveStore(
            archive_path(thread.dir),
            self._config.task_continuity,
            scope=scope_binding(thread.user_id, thread.id),  # written into the file at creation
            readonly=thread.read_only is not None,  # a view of a thread another process writes
        )
        context = ContinuityContext.for_log(
            thread.log, self._surface, store, user_id=thread.user_id, thread_id=thread.id
        )
        return self._offered(context, capture_hook(context))

    def _offered(self, context: ContinuityContext, capture: Capture) -> _Built:
        """The parts a request gets: with tools offered, the tools, the contract and the
        notebook; else only the capture (the archive is kept either way)."""
        if not self._offer_tools:
            return _Built(context, capture)
        from engine.continuity import AUTHORITY_CONTRACT, build_tools, context_builder

        return _Built(
            context,
            capture,
            tuple(build_tools(context)),
            AUTHORITY_CONTRACT,
            context_builder(context),
        )

    def offer_tools(self, offer: bool) -> None:
        """Another model (/model): offer the three tools from the next request on, or stop."""
        if offer == self._offer_tools:
            return
        self._offer_tools = offer
        built = self._built
        if built is not None:
            self._built = self._offered(built.context, built.capture)

    # -- the compaction service's capture ---------------------------------------------

    async def capture(self, key: int, entries: list[Entry]) -> dict[str, Any]:
        built = self._build()
        if built is None:
            raise RuntimeError("task continuity is closed")
        return await built.capture(key, entries)

    # -- the driver's Extension ---------------------------------------------------------

    def tools(self) -> Sequence[Tool]:
        built = self._build()
        return built.tools if built is not None else ()

    def instructions(self) -> str:
        built = self._build()
        return built.instructions if built is not None else ""

    async def amend(self, messages: list[Message]) -> list[Message]:
        built = self._build()
        if built is None or built.builder is None:
            return messages
        return await built.builder(messages)

    def close(self) -> None:
        """Close the archive, if it was opened; nothing is built after this."""
        self._closed = True
        if self._built is not None and self._built.context.store is not None:
            self._built.context.store.close()
