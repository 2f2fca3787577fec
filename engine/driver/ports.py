"""What the driver plugs into: the model, the compaction hooks, an extension, front ends."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from engine.log import SessionLog
from engine.model.tools import Tool
from engine.surface import Message, Surface


class ModelPort(Protocol):
    """What the driver needs from a model client (engine.model.ModelClient)."""

    async def complete(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        on_delta: Callable[[str], None] | None = None,
        model: str | None = None,
        on_reasoning: Callable[[str], None] | None = None,
    ) -> Any: ...


class TurnAgent(Protocol):
    """What compaction needs of the driver it runs beside: the log, the surface, and the
    boundary before the next turn."""

    log: SessionLog
    surface: Surface

    def reserve_turn_admission(self) -> Callable[[], None] | None: ...


class TurnHooks(Protocol):
    """Where compaction plugs into a turn without the driver knowing how."""

    async def before_request(self, driver: TurnAgent, turn: int) -> None: ...

    async def on_overflow(self, driver: TurnAgent, turn: int) -> bool: ...


class Extension(Protocol):
    """What a layer above adds to every request: tools, a paragraph of system prompt and a
    pass over the messages. Asked anew for each request, so it may be built after the
    driver (a launch's task continuity is built on the first request)."""

    def tools(self) -> Sequence[Tool]: ...

    def instructions(self) -> str: ...

    async def amend(self, messages: list[Message]) -> list[Message]: ...


class Observer(Protocol):
    """A front end following the driver. Its failures never reach a turn."""

    def on_delta(self, turn: int, text: str) -> None: ...

    def on_reasoning(self, turn: int, text: str) -> None:
        """A reasoning model's thinking streamed (an observer may leave this out)."""

    def on_state(self) -> None: ...

    def on_failure(self, text: str) -> None:
        """A failure the log could not record (it could not be written); one line."""


ContextBuilder = Callable[[list[Message]], Awaitable[list[Message]]]
