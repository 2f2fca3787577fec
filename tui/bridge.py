"""The engine's port, seen from Textual: each notification becomes a Message.

The engine calls its listeners inside an append or a streamed delta; this
listener only posts a Message to the chat screen, so the widgets do their
work in Textual's own message loop, in the order the engine spoke. Deltas
that arrive while their message is still queued join it, so a fast model
costs one message per turn of the UI loop, not one per token (a reasoning
model's thinking and its text each have their own message). Each
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
    ModelStatus,
    Notification,
    ReasoningDelta,
    ReplyDelta,
    Retrying,
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
    """Every delta that arrived until the screen took it: one message, not one per delta."""

    turn: int
    parts: list[str]

    def take(self) -> str:
        """The text so far; later deltas go to a new message."""
        self.bridge.close_deltas(self.parts)
        return "".join(self.parts)


@dataclass
class ReasoningStreamed(EngineMessage, bubble=False):
    """Every thinking delta that arrived until the screen took it (as `ReplyStreamed`)."""

    turn: int
    parts: list[str]

    def take(self) -> str:
        self.bridge.close_deltas(self.parts)
        return "".join(self.parts)


@dataclass
class EngineStateChanged(EngineMessage, bubble=False):
    state: EngineState


@dataclass
class EngineFailed(EngineMessage, bubble=False):
    """A failure the engine could not record in the log (the disk)."""

    text: str


@dataclass
class EngineWaiting(EngineMessage, bubble=False):
    """What the running request waits on: a retry ("retrying (2/3)…"), the offline model's
    start ("starting the offline model…"); "" when that is over."""

    text: str


class Bridge:
    """Follows one Runtime for one target (the chat screen) until closed."""

    def __init__(self, runtime: Runtime, target: MessagePump, on_error: ErrorHook) -> None:
        self.runtime = runtime
        self._target = target
        self._unsubscribe = runtime.subscribe(self._post, on_error=on_error)
        self._deltas: list[str] | None = None
        """The parts of the ReplyStreamed (or ReasoningStreamed) still queued, which later
        deltas of its kind join."""
        self._thinking = False
        """`_deltas` are thinking (a ReasoningStreamed's)."""

    def _post(self, notification: Notification) -> None:
        message: EngineMessage
        if isinstance(notification, ReplyDelta | ReasoningDelta):
            thinking = isinstance(notification, ReasoningDelta)
            if self._deltas is not None and self._thinking == thinking:
                self._deltas.append(notification.text)
                return
            self._deltas, self._thinking = [notification.text], thinking
            kind = ReasoningStreamed if thinking else ReplyStreamed
            message = kind(self, notification.turn, self._deltas)
            self._target.post_message(message)
            return
        # Anything else the engine says comes after the deltas queued so far.
        self._deltas = None
        if isinstance(notification, LogAppended):
            message = LogEventAppended(self, notification.event)
        elif isinstance(notification, StateChanged):
            message = EngineStateChanged(self, notification.state)
        elif isinstance(notification, Failure):
            message = EngineFailed(self, notification.text)
        elif isinstance(notification, Retrying | ModelStatus):
            message = EngineWaiting(self, notification.text)
        else:
            return
        self._target.post_message(message)

    def close_deltas(self, parts: list[str]) -> None:
        if self._deltas is parts:
            self._deltas = None

    def close(self) -> None:
        """The closing runtime's late notifications must not reach widgets being torn down."""
        self._unsubscribe()
