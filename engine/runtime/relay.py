"""The driver and the log, heard as the port's notifications (engine.port)."""

from __future__ import annotations

from collections.abc import Callable

from engine.driver import Driver
from engine.events import CompactEnd, CompactStart, LogEvent, TurnEnd, TurnStart
from engine.log import SessionLog
from engine.port import (
    EngineState,
    Failure,
    LogAppended,
    ModelStatus,
    Port,
    QueuedPrompt,
    ReasoningDelta,
    ReplyDelta,
    Retrying,
    StateChanged,
)

_STATE_KINDS = (CompactStart, CompactEnd, TurnStart, TurnEnd)


def engine_state(driver: Driver, log: SessionLog) -> EngineState:
    return EngineState(
        running_turn=driver.running_turn,
        compacting=log.tail.open_compact is not None,
        queue=tuple(QueuedPrompt(i.id, i.text, i.placement, i.held) for i in driver.inbox),
    )


class DriverRelay:
    """The driver's observer and the model client's (engine.model.ModelObserver), turned
    into notifications on a port."""

    def __init__(self, port: Port, state: Callable[[], EngineState]) -> None:
        self._port = port
        self._state = state

    def on_delta(self, turn: int, text: str) -> None:
        self._port.publish(ReplyDelta(turn, text))

    def on_reasoning(self, turn: int, text: str) -> None:
        self._port.publish(ReasoningDelta(turn, text))

    def on_state(self) -> None:
        self._port.publish(StateChanged(self._state()))

    def on_failure(self, text: str) -> None:
        self._port.publish(Failure(text))

    def on_retry(self, attempt: int, attempts: int) -> None:
        """A turn's (or a summary's) request is being retried."""
        self._port.publish(Retrying(attempt, attempts))

    def on_model_status(self, text: str) -> None:
        self._port.publish(ModelStatus(text))

    def on_event(self, event: LogEvent) -> None:
        """The log's listener: every appended event, then the state when the event changed
        what runs (a turn or a compaction starts or ends without a driver callback)."""
        self._port.publish(LogAppended(event))
        if isinstance(event, _STATE_KINDS):
            self.on_state()
