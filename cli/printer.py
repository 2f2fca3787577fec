"""Line-oriented output of a running session, shared by the REPL and -p.

Replies stream to stdout as they arrive; errors and notices go to stderr as
one line each, so `trove -p … > answer.txt` captures only the answer. A
reasoning model's thinking is two notices: `[thinking…]` when it begins, and
`[thought for 12s (3,456 chars)]` when the answer begins (or the reply ends);
its text is not printed (a line-oriented terminal would scroll the answer away
under it): the log keeps it and `/export` shows it. Every
character written passes through `engine.util.safe_text` first: the model, tools
and the server's error messages never reach the terminal's control channel.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import TextIO

from engine.events import (
    AssistantMessage,
    CompactStart,
    LogEvent,
    SessionRewind,
    ToolResult,
    TurnEnd,
)
from engine.port import (
    Failure,
    LogAppended,
    ModelStatus,
    Notification,
    ReasoningDelta,
    ReplyDelta,
    Retrying,
    Unsubscribe,
)
from engine.runtime import Runtime
from engine.util.safe_text import SafeStream, safe_text
from engine.util.thought import thought_line


class StreamPrinter:
    def __init__(
        self, out: TextIO | None = None, err: TextIO | None = None, *, whole_lines: bool = False
    ) -> None:
        self._out = out
        self._err = err
        self.errors: list[str] = []
        self._mid_line = False
        self.whole_lines = whole_lines
        """At a live prompt, partial lines would be drawn into the prompt's line."""
        self._pending = ""
        self._interrupted = False
        """This turn's reply was cut off by a failed stream and kept in the log."""
        self._safe = SafeStream()
        self.on_partial: Callable[[], None] | None = None
        """Told when the unfinished line changes, so a live prompt can redraw it."""
        self._thinking: tuple[float, int] | None = None
        """When the thinking being streamed began, and its length so far."""

    @property
    def out(self) -> TextIO:
        """Looked up per write: at a live prompt, sys.stdout is prompt-toolkit's proxy."""
        return self._out or sys.stdout

    @property
    def err(self) -> TextIO:
        return self._err or sys.stderr

    def attach(self, runtime: Runtime) -> Unsubscribe:
        """Follow the runtime's output; what opening the thread reported comes first."""
        unsubscribe = runtime.subscribe(self.notify)
        for notice in runtime.notices:
            self.notice(notice)
        return unsubscribe

    def notify(self, notification: Notification) -> None:
        """The engine port's listener."""
        if isinstance(notification, ReplyDelta):
            self.on_delta(notification.turn, notification.text)
        elif isinstance(notification, ReasoningDelta):
            self.on_reasoning(notification.text)
        elif isinstance(notification, LogAppended):
            self.on_event(notification.event)
        elif isinstance(notification, Failure):
            self.error(notification.text)
        elif isinstance(notification, Retrying | ModelStatus) and notification.text:
            self.notice(f"[{notification.text}]")

    def on_reasoning(self, text: str) -> None:
        """Thinking streamed: said once as it begins, summed up once it is over."""
        if self._thinking is None:
            self._thinking = (time.monotonic(), 0)
            self.notice("[thinking…]")
        began, chars = self._thinking
        self._thinking = (began, chars + len(text))

    def _thought(self) -> None:
        """The thinking is over (the answer began, the reply or the turn ended)."""
        if self._thinking is not None:
            began, chars = self._thinking
            self._thinking = None
            self.notice(f"[{thought_line(chars, time.monotonic() - began)}]")

    def on_delta(self, turn: int, text: str) -> None:
        self._thought()
        text = self._safe.feed(text)
        if not text:  # all of it held back: the start of a sequence split across deltas
            return
        if self.whole_lines:
            self._pending += text
            text = self._take_lines()
            self._partial_changed()
            if not text:
                return
        self.out.write(text)
        self.out.flush()
        self._mid_line = not text.endswith("\n")

    @property
    def partial(self) -> str:
        """The reply's unfinished line (whole-lines mode), which a live prompt shows above
        its input until the line is complete and printed."""
        return self._pending

    def _partial_changed(self) -> None:
        if self.on_partial is not None:
            self.on_partial()

    # Log listener -------------------------------------------------------------

    def _take_lines(self) -> str:
        """Complete lines, wrapping a long paragraph at the terminal's width so it
        still streams a line at a time."""
        width = max(20, shutil.get_terminal_size().columns - 1)
        out: list[str] = []
        while True:
            newline = self._pending.find("\n")
            if 0 <= newline <= width:
                out.append(self._pending[: newline + 1])
                self._pending = self._pending[newline + 1 :]
            elif len(self._pending) > width:
                cut = self._pending.rfind(" ", 0, width + 1)
                cut = cut if cut > 0 else width
                out.append(self._pending[:cut] + "\n")
                self._pending = self._pending[cut:].lstrip(" ")
            else:
                return "".join(out)

    def _end_line(self) -> None:
        self._pending += self._safe.flush()
        if self._pending:
            self.out.write(self._pending)
            self._pending = ""
            self._mid_line = True
            self._partial_changed()
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False

    def on_event(self, event: LogEvent) -> None:
        if isinstance(event, AssistantMessage):
            self._thought()
            self._end_line()
            self._interrupted = event.interrupted
            for call in event.calls:
                self.notice(f"[tool] {call.name}({_short(call.arguments or '')})")
        elif isinstance(event, ToolResult) and event.server is not None:
            self.notice(f"[tool result] {event.server}: {_short(event.content)}")
        elif isinstance(event, CompactStart) and event.open_turn:
            self.notice(
                "[your prompt alone is larger than the context window: it is summarized too]"
            )
        elif isinstance(event, SessionRewind) and (event.retry or event.undoes is not None):
            self._end_line()
            if event.retry:
                self.notice("[answering the last prompt again; the earlier reply is kept]")
            else:
                self.notice(
                    "[the retry did not finish: the earlier reply is back"
                    " (what the retry wrote is kept as a branch)]"
                )
        elif isinstance(event, TurnEnd):
            self._thought()
            self._end_line()
            interrupted, self._interrupted = self._interrupted, False
            if event.status == "error":
                kept = " (the partial reply is kept in the thread)" if interrupted else ""
                self.error(f"{event.error or 'the turn failed'}{kept}")
            elif event.status == "cancelled":
                self.notice("[cancelled: the partial reply is kept in the thread]")

    def notice(self, text: str) -> None:
        if not self.whole_lines:
            self._end_line()
        # else: the unfinished line is the live prompt's (not yet on stdout); a notice
        # printed above it must not cut the reply in two.
        print(safe_text(text), file=self.err, flush=True)

    def say(self, text: str) -> None:
        """A command's result on stdout, as its own line (a reply streaming meanwhile goes on)."""
        print(safe_text(text), file=self.out, flush=True)

    def error(self, text: str) -> None:
        self.errors.append(text)
        self.notice(f"error: {text}")


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
