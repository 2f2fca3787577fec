"""The Driver: the inbox, turn admission and the turn loop over one session log.

Each room is a mixin in its own module (`inbox`, `admission`, `turn_loop`,
over the shared `state`); this one builds the state and tears it down.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from engine.driver.admission import Admission
from engine.driver.inbox import Inbox
from engine.driver.ports import ContextBuilder, Extension, ModelPort, Observer, TurnHooks
from engine.driver.thinking import Thinking
from engine.driver.turn_loop import DEFAULT_MAX_TOOL_ROUNDS, TurnLoop
from engine.log import SessionLog
from engine.model.tools import ToolBox
from engine.surface import Surface
from engine.surface.kept import for_log


class Driver(Inbox, Admission, TurnLoop):
    """Owns the inbox and runs one turn at a time over a session log."""

    def __init__(
        self,
        log: SessionLog,
        model: ModelPort,
        *,
        tools: ToolBox | None = None,
        system_prompt: str = "",
        hooks: TurnHooks | None = None,
        context: ContextBuilder | None = None,
        extension: Extension | None = None,
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        surface: Surface | None = None,
        observers: Sequence[Observer] = (),
        model_entry: str | None = None,
    ) -> None:
        """`surface` is the log's surface when something built before the driver (the
        continuity context) must share it; it is built from the log otherwise.
        `extension` adds its tools, instructions and context pass to every request."""
        self.log = log
        self.model = model
        self.model_entry = model_entry
        """The config's name for the model (`models:`), recorded on each reply."""
        self.tools = tools or ToolBox()
        self.system_prompt = system_prompt
        self.hooks = hooks
        self.context = context
        self.extension = extension
        self.max_tool_rounds = max_tool_rounds
        self.surface = surface if surface is not None else for_log(log)
        log.projections.insert(0, self.surface.apply)
        log.on_rewind.append(lambda: self.surface.follow(log.line_change, log.events))
        self.observers = list(observers)
        self._inbox = []
        self._steering = []
        self._removed = {}
        self._claim = None
        self._reservation = None
        self._turn_task = None
        self._running_turn = None
        self._partial = []
        self._thinking = Thinking()
        self._idle = asyncio.Event()
        self._closed = False
        self._restore_inbox()
        self._update_idle()

    # -- teardown ------------------------------------------------------------

    async def aclose(self) -> None:
        """Drain the driver's own activity; never wait on a reservation holder."""
        self.close_admission()
        task = self._turn_task
        if task is not None:
            task.cancel("session closing")
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._changed()
