"""The transcript: one widget per message, built from session-log events.

It is a view of the log: every widget comes from an event (live, or on
replay when a thread is opened), so what the user sees is what the log
holds. Past a high-water mark the oldest widgets are pruned; their text
stays in the log and comes back when the user asks for earlier messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Button

from engine import log as k
from engine.log import Event
from tui.widgets.chat_message import AssistantMessage, Notice, UserMessage
from tui.widgets.checkpoint_block import CheckpointBlock
from tui.widgets.tool_block import ToolBlock

HIGH_WATER = 400
"""Widgets kept mounted; beyond this the oldest are pruned (Toad keeps ~1,500 lines)."""
CHUNK = 150
"""Events rendered per "load earlier" step and on opening a thread."""


class LoadEarlier(Button):
    DEFAULT_CSS = """
    LoadEarlier { width: 100%; height: 1; border: none; min-width: 0; margin: 0; }
    """


class Transcript(VerticalScroll):
    DEFAULT_CSS = """
    Transcript {
        layout: stream;
        padding: 0 1;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.events: Sequence[Event] = ()
        self._start = 0
        self._reply: AssistantMessage | None = None
        self._tools: dict[str, ToolBlock] = {}
        self._checkpoints: dict[int, CheckpointBlock] = {}
        self._pending: set[asyncio.Task[None]] = set()

    # -- building widgets from events -------------------------------------------

    def _widgets_for(self, event: Event, *, live: bool = False) -> list[Widget]:
        kind = event["kind"]
        if kind == k.USER_MESSAGE:
            checkpoint = event.get("checkpoint")
            if isinstance(checkpoint, dict):
                text = str(event.get("text", ""))
                summary = text.split("\n\n", 1)[-1]
                block = CheckpointBlock(
                    seq=event["seq"], count=int(checkpoint.get("count", 0)), summary=summary
                )
                self._checkpoints[int(checkpoint.get("start", 0))] = block
                return [block]
            text = str(event.get("text", ""))
            if event.get("source") == "inject":
                message = UserMessage(text, seq=event["seq"], label="context")
                message.add_class("-injected")
                return [message]
            if event.get("placement") == "next-step":
                message = UserMessage(text, seq=event["seq"], label="steer")
                message.add_class("-steer")
                return [message]
            return [UserMessage(text, seq=event["seq"])]
        if kind == k.ASSISTANT_MESSAGE:
            out: list[Widget] = []
            content = str(event.get("content") or "")
            if live and self._reply is not None:
                reply, self._reply = self._reply, None
                reply.seq = event["seq"]
                self._spawn(reply.finish(content, cancelled=bool(event.get("cancelled"))))
            elif content:
                message = AssistantMessage(content, seq=event["seq"])
                if event.get("cancelled"):
                    message.add_class("-cancelled")
                out.append(message)
            for call in event.get("tool_calls") or ():
                block = ToolBlock(
                    call.get("id", ""), call.get("name", "?"), call.get("arguments", "")
                )
                self._tools[block.call_id] = block
                out.append(block)
            return out
        if kind == k.TOOL_RESULT:
            block = self._tools.get(str(event.get("call_id")))
            if block is not None:
                if block.is_mounted:
                    block.set_result(str(event.get("content", "")))
                else:
                    block.result = str(event.get("content", ""))
            return []
        if kind == k.TURN_END:
            if event.get("status") == "error":
                return [Notice(f"✗ {event.get('error', 'the turn failed')}", variant="error")]
            if event.get("status") == "cancelled":
                return [Notice("turn cancelled — the partial reply is kept", variant="warning")]
            return []
        if kind == k.COMPACT_END:
            block = self._checkpoints.get(int(event.get("start", 0)))
            archive = event.get("archive")
            if block is not None:
                if isinstance(archive, dict) and isinstance(archive.get("batch"), int):
                    block.batch = archive["batch"]
                else:
                    block.archive_note = "not archived (history unavailable)"
            return []
        return []

    def _spawn(self, coro: object) -> None:
        task = asyncio.ensure_future(coro)  # type: ignore[arg-type]
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    # -- live ---------------------------------------------------------------------

    def show_event(self, event: Event) -> None:
        widgets = self._widgets_for(event, live=True)
        if widgets:
            self.mount_all(widgets)
            self._prune()

    def delta(self, text: str) -> None:
        if self._reply is None:
            self._reply = AssistantMessage()
            self.mount(self._reply)
        self._reply.write(text)

    def notice(self, text: str, variant: str = "") -> Notice:
        widget = Notice(text, variant=variant)
        self.mount(widget)
        self._prune()
        return widget

    # -- replay and pruning ----------------------------------------------------------

    def load(self, events: Sequence[Event]) -> None:
        """Show the newest part of a thread; earlier parts load on demand."""
        self.events = events
        self._start = max(0, len(events) - CHUNK)
        widgets: list[Widget] = []
        for event in events[self._start :]:
            widgets.extend(self._widgets_for(event))
        if self._start > 0:
            widgets.insert(0, LoadEarlier(self._earlier_label(), id="load-earlier"))
        self.mount_all(widgets)
        self.anchor()

    def _earlier_label(self) -> str:
        return f"▲ {self._start} earlier events — click to load"

    def load_earlier(self) -> None:
        if self._start == 0:
            return
        begin = max(0, self._start - CHUNK)
        widgets: list[Widget] = []
        for event in self.events[begin : self._start]:
            widgets.extend(self._widgets_for(event))
        self._start = begin
        button = self.query_one("#load-earlier", LoadEarlier)
        if widgets:
            self.mount_all(widgets, after=button)
        if self._start == 0:
            button.remove()
        else:
            button.label = self._earlier_label()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if isinstance(event.button, LoadEarlier):
            event.stop()
            self.load_earlier()

    def _prune(self) -> None:
        """Drop the oldest widgets while the user follows the newest output."""
        children = [c for c in self.children if not isinstance(c, LoadEarlier)]
        excess = len(children) - HIGH_WATER
        if excess <= 0 or not self.following:
            return
        doomed = children[:excess]
        oldest_kept = children[excess]
        seq = getattr(oldest_kept, "seq", None)
        if isinstance(seq, int):
            self._start = max(self._start, seq - 1)
        for widget in doomed:
            widget.remove()
        if not self.query("#load-earlier"):
            self.mount(LoadEarlier(self._earlier_label(), id="load-earlier"), before=0)
        else:
            self.query_one("#load-earlier", LoadEarlier).label = self._earlier_label()

    @property
    def following(self) -> bool:
        """Anchored and not scrolled away by the user: safe to prune the top."""
        return self.is_anchored and self.scroll_y >= self.max_scroll_y - 1
