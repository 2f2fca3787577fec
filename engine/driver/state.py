"""The driver's shared state: what every room of the driver reads and keeps current.

Inbox, admission and the turn loop are mixins over this one base; it holds
the attributes they share, the idle fact `when_idle` waits on, and the
observer fan-out that keeps a front end's failure away from a turn.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from engine.driver.inbox_item import InboxItem
from engine.driver.ports import ContextBuilder, Extension, ModelPort, Observer, TurnHooks
from engine.driver.thinking import Thinking
from engine.events import SessionRewind
from engine.log import SessionLog
from engine.model.tools import ToolBox
from engine.surface import Surface


class DriverState:
    """The state behind one Driver; `engine.driver.driver.Driver.__init__` sets it."""

    log: SessionLog
    model: ModelPort
    model_entry: str | None
    """The `models:` entry `model` talks to, recorded on each reply it writes."""
    tools: ToolBox
    system_prompt: str
    hooks: TurnHooks | None
    context: ContextBuilder | None
    extension: Extension | None
    max_tool_rounds: int
    surface: Surface
    observers: list[Observer]
    _inbox: list[InboxItem]
    _steering: list[InboxItem]
    _removed: dict[int, InboxItem]
    _claim: asyncio.Handle | None
    _reservation: object | None
    _turn_task: asyncio.Task[None] | None
    _running_turn: int | None
    _partial: list[str]
    _thinking: Thinking
    """What the running request's model thought so far (a reasoning model's)."""
    _idle: asyncio.Event
    _closed: bool

    # -- state ---------------------------------------------------------------

    @property
    def running_turn(self) -> int | None:
        return self._running_turn

    @property
    def accepts_next_step(self) -> bool:
        """Steering goes into a running turn only; a reservation has none."""
        return self._turn_task is not None and not self._turn_task.done()

    @property
    def reserved(self) -> bool:
        return self._reservation is not None

    @property
    def inbox(self) -> list[InboxItem]:
        """Queued items in FIFO order (steering waiting for the next request first)."""
        return [*self._steering, *self._inbox]

    @property
    def partial_reply(self) -> str:
        return "".join(self._partial)

    @property
    def partial_reasoning(self) -> str:
        """What the running request's model has thought so far."""
        return self._thinking.text

    def _takeable(self) -> list[InboxItem]:
        """The queue as admission may take it: up to the first item being edited."""
        inbox = self._inbox
        held = next((i for i, item in enumerate(inbox) if item.held), None)
        return inbox if held is None else inbox[:held]

    def _has_waking(self) -> bool:
        return any(item.waking for item in self._takeable())

    def _is_idle(self) -> bool:
        return (
            self._turn_task is None
            and self._claim is None
            and self._reservation is None
            and not self._has_waking()
        )

    def _update_idle(self) -> None:
        if self._is_idle() or self._closed:
            self._idle.set()
        else:
            self._idle.clear()

    def _changed(self) -> None:
        self._update_idle()
        self._tell("on_state")

    def _tell(self, method: str, *args: Any) -> None:
        """Call every observer; one that raises is reported and skipped, never raised here."""
        for observer in list(self.observers):
            callback = getattr(observer, method, None)
            if callback is None:
                continue
            try:
                callback(*args)
            except Exception as exc:
                logging.getLogger("trove").warning(
                    "observer %r failed in %s: %s: %s", observer, method, type(exc).__name__, exc
                )

    # -- across rooms ----------------------------------------------------------

    def _arm(self) -> None:
        """Schedule the claim of the next turn (engine.driver.admission)."""
        raise NotImplementedError

    def _run_claim(self) -> None:
        """Start the turn the scheduled claim would start (engine.driver.admission)."""
        raise NotImplementedError

    async def _turn(self, items: list[InboxItem], retry: SessionRewind | None = None) -> None:
        """Run one turn over the claimed items (engine.driver.turn_loop)."""
        raise NotImplementedError
