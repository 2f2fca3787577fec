"""The engine's port, seen from Textual: each notification becomes a Message.

The engine calls its listeners inside an append or a streamed delta; this
listener only posts a Message to the chat screen, so the widgets do their
work in Textual's own message loop, in the order the engine spoke. Each
Message names the bridge that posted it: after a thread switch, whatever
the old thread posted and is still queued is recognised and dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message
from textual.message_pump import MessagePump

from engine.events import LogEvent
from engine.port import (
    EngineState,
    ErrorHook,
    Failure,
    LogAppended,
    Notification,
    ReplyDelta,
    StateChanged,
)
from engine.runtime import Runtime


@dataclass
class EngineMessage(Message, bubble=False):
    bridge: Bridge


@dataclass
class LogEventAppended(EngineMessage, bubble=False):
    event: LogEvent


@dataclass
class ReplyStreamed(EngineMessage, bubble=False):
    turn: int
    text: str


@dataclass
class EngineStateChanged(EngineMessage, bubble=False):
    state: EngineState


@dataclass
class EngineFailed(EngineMessage, bubble=False):
    """A failure the engine could not record in the log (the disk)."""

    text: str


class Bridge:
    """Follows one Runtime for one target (the chat screen) until closed."""

    def __init__(self, runtime: Runtime, target: MessagePump, on_error: ErrorHook) -> None:
        self.runtime = runtime
        self._target = target
        self._unsubscribe = runtime.subscribe(self._post, on_error=on_error)

    def _post(self, notification: Notification) -> None:
        message: EngineMessage
        if isinstance(notification, LogAppended):
            message = LogEventAppended(self, notification.event)
        elif isinstance(notification, ReplyDelta):
            message = ReplyStreamed(self, notification.turn, notification.text)
        elif isinstance(notification, StateChanged):
            message = EngineStateChanged(self, notification.state)
        elif isinstance(notification, Failure):
            message = EngineFailed(self, notification.text)
        else:
            return
        self._target.post_message(message)

    def close(self) -> None:
        """The closing runtime's late notifications must not reach widgets being torn down."""
        self._unsubscribe()
