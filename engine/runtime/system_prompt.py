"""The thread's system prompt: the default, or the text `/system` set.

`/system TEXT` is a `session/system` line in the log, so it holds when the
thread is opened again; `/system --reset` is one with no text (the default
again). The newest in the file holds, on whatever branch: a rewind or a retry
keeps it (`TailState.system`). The driver sends it from its next request on.
A thread not on disk yet keeps it in memory and writes it ahead of its first
message, as commands' lifecycles are (a /system alone makes no thread).
"""

from __future__ import annotations

from engine.driver import Driver
from engine.events import SessionSystem
from engine.log import LogWriteError, SessionLog

SYSTEM_PROMPT = (
    "You are a helpful assistant in Trove, a terminal chat app. "
    "Answer clearly and concisely; use Markdown where it helps."
)
"""The default for a model of an endpoint; the offline model gets none (its chat template's
own default answers better)."""


class SystemPrompt:
    def __init__(self, log: SessionLog, driver: Driver, default: str) -> None:
        self._log = log
        self._driver = driver
        self.default = default
        """What a thread without `/system` sends (the model in use decides it)."""
        self._waiting: SessionSystem | None = None
        """A /system on a thread not on disk yet, written ahead of its first message."""
        if not log.exists:
            log.on_create.append(self._write_waiting)
        self._apply()

    @property
    def custom(self) -> str | None:
        """The text /system set (None: the default holds)."""
        event = self._waiting or self._log.tail.system
        return event.text if event is not None else None

    @property
    def text(self) -> str:
        """What the next request sends ("" sends no system message)."""
        custom = self.custom
        return self.default if custom is None else custom

    def set(self, text: str | None) -> None:
        """Set (None: reset to the default) from the next request on; raises LogWriteError
        when the log cannot take it, and then nothing changed."""
        event = SessionSystem(text=text)
        if self._log.exists:
            self._log.append(event)
        else:
            self._waiting = event
        self._apply()

    def use_default(self, default: str) -> None:
        """Another model is in use (/model): its default, unless /system set one."""
        self.default = default
        self._apply()

    def _apply(self) -> None:
        self._driver.system_prompt = self.text

    def _write_waiting(self) -> None:
        waiting, self._waiting = self._waiting, None
        if waiting is None:
            return
        try:
            self._log.append(waiting)
        except LogWriteError:
            self._waiting = waiting  # still in force here; the message's own append says why
