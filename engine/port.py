"""The one way a front end follows an open thread: typed notifications.

A front end (the Textual app, the plain REPL, one-shot mode, a script)
calls `Runtime.subscribe(listener)` and gets every notification below, in
the order the engine produced them, until it calls the returned
unsubscribe. Listeners run inside the engine's call (an append, a delta),
so each is isolated: one that raises is reported to the port's error hook
(the logger unless the front end gives its own) and never reaches the
engine, so a display bug cannot abort a turn or a compaction.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from msgspec import Struct

from engine.events import LogEvent


class LogAppended(Struct, frozen=True):
    """An event reached the log (it is already durable)."""

    event: LogEvent


class ReplyDelta(Struct, frozen=True):
    """A fragment of the reply streaming in `turn`; the log gets the whole reply later."""

    turn: int
    text: str


class ReasoningDelta(Struct, frozen=True):
    """A fragment of what a reasoning model thinks in `turn`, before (or between) its
    reply's text; the log gets the whole thinking with the reply."""

    turn: int
    text: str


class QueuedPrompt(Struct, frozen=True):
    """A prompt waiting in the inbox, as a front end shows it."""

    id: int
    text: str
    placement: str
    held: bool = False
    """Being edited: the queue waits at it until the edit is saved or dropped."""


class EngineState(Struct, frozen=True):
    """What runs now and what waits: a copy, safe to keep."""

    running_turn: int | None
    compacting: bool
    queue: tuple[QueuedPrompt, ...]


class StateChanged(Struct, frozen=True):
    """The driver's state changed (a turn started or ended, the queue changed)."""

    state: EngineState


class Failure(Struct, frozen=True):
    """A failure the log could not record (the disk refused it); one line."""

    text: str


class Retrying(Struct, frozen=True):
    """A request failed and is being tried again: attempt `attempt` of `attempts`."""

    attempt: int
    attempts: int

    @property
    def text(self) -> str:
        return f"retrying ({self.attempt}/{self.attempts})…"


class ModelStatus(Struct, frozen=True):
    """What the model client waits on before a request ("starting the offline model…");
    "" once it is over."""

    text: str


Notification = (
    LogAppended | ReplyDelta | ReasoningDelta | StateChanged | Failure | Retrying | ModelStatus
)
Listener = Callable[[Notification], None]
ErrorHook = Callable[[Listener, Notification, Exception], None]
Unsubscribe = Callable[[], None]


def _log_failure(listener: Listener, notification: Notification, exc: Exception) -> None:
    logging.getLogger("trove").warning(
        "a front end's listener (%s) failed on %s: %s: %s",
        getattr(listener, "__qualname__", listener),
        type(notification).__name__,
        type(exc).__name__,
        exc,
    )


class Port:
    """Fans the engine's notifications out to front ends, each isolated."""

    def __init__(self, on_error: ErrorHook = _log_failure) -> None:
        self._subscribers: list[tuple[Listener, ErrorHook]] = []
        self._on_error = on_error

    def subscribe(self, listener: Listener, *, on_error: ErrorHook | None = None) -> Unsubscribe:
        """Follow every notification; the returned callable stops it (idempotent).

        `on_error` hears of this listener's failures (after the logger's default).
        """
        entry = (listener, on_error or self._on_error)
        self._subscribers.append(entry)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(entry)

        return unsubscribe

    def publish(self, notification: Notification) -> None:
        for listener, on_error in list(self._subscribers):
            try:
                listener(notification)
            except Exception as exc:  # a front end's failure never reaches the engine
                with contextlib.suppress(Exception):
                    on_error(listener, notification, exc)
