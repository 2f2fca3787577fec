"""The status strip: what is running now, and the queue of prompts waiting.

The queue is a line-rendered OptionList: focus it (Tab) and press Delete to
remove an item or Enter to edit it; an item keeps its id either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from engine.util.safe_text import safe_text
from tui.messages import QueueItemEdit, QueueItemRemove

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class ActivityLine(Widget):
    DEFAULT_CSS = """
    ActivityLine { height: 1; padding: 0 1; color: $text-muted; }
    """

    activity: reactive[str] = reactive("")
    started: reactive[float | None] = reactive(None)
    now: reactive[float] = reactive(0.0)

    def render(self) -> Content:
        if not self.activity:
            return Content("")
        if self.started is None:
            return Content.assemble(("● ", "$accent"), self.activity)
        elapsed = max(0.0, self.now - self.started)
        frame = SPINNER[int(elapsed * 10) % len(SPINNER)]
        return Content.assemble(
            (f"{frame} ", "$accent"), self.activity, (f"  {elapsed:.1f}s", "$text-muted")
        )


class QueueList(OptionList):
    DEFAULT_CSS = """
    QueueList {
        height: auto;
        max-height: 6;
        border: none;
        padding: 0 1;
        background: transparent;
    }
    QueueList:focus { background: $boost; }
    """
    BINDINGS = [
        Binding(
            "delete,backspace",
            "remove",
            "Remove",
            tooltip="remove the highlighted prompt (Ctrl+Z puts it back)",
        ),
        Binding("e,enter", "edit", "Edit", tooltip="edit: take the prompt back into the box"),
    ]

    def action_cursor_up(self) -> None:
        if self.highlighted:  # the first item stays: the queue does not wrap
            super().action_cursor_up()

    def action_cursor_down(self) -> None:
        if self.highlighted is None or self.highlighted < self.option_count - 1:
            super().action_cursor_down()

    def _selected(self) -> int | None:
        if self.highlighted is None:
            return None
        option = self.get_option_at_index(self.highlighted)
        return int(option.id) if option.id else None

    def action_remove(self) -> None:
        item = self._selected()
        if item is not None:
            self.post_message(QueueItemRemove(item))

    def action_edit(self) -> None:
        item = self._selected()
        if item is not None:
            self.post_message(QueueItemEdit(item))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_edit()


class StatusStrip(Vertical):
    DEFAULT_CSS = """
    StatusStrip { height: auto; }
    StatusStrip > QueueList { display: none; }
    """

    def __init__(self, clock: Callable[[], float], id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock
        self._queue: tuple[tuple[int, str, str, bool], ...] = ()
        """The items the queue list shows."""

    def compose(self) -> ComposeResult:
        yield ActivityLine()
        yield QueueList()

    def on_mount(self) -> None:
        self.set_interval(0.1, self._tick)

    def _tick(self) -> None:
        line = self.query_one(ActivityLine)
        if line.started is not None:
            line.now = self.clock()

    def set_activity(self, text: str, *, timed: bool = False, restart: bool = True) -> None:
        """`restart=False` keeps a running timer: the same work, told differently (a retry)."""
        line = self.query_one(ActivityLine)
        if text != line.activity or (timed and line.started is None):
            line.activity = text
            if restart or not timed or line.started is None:
                line.started = self.clock() if timed else None
            line.now = self.clock()

    def set_queue(self, items: Sequence[tuple[int, str, str, bool]]) -> None:
        """Items as (id, text, placement, held), oldest first.

        Called on every state the engine reports: the same items leave the list as it
        is, and showing or hiding it sets its display alone (a class on the strip would
        apply the stylesheet to all it holds again, on the loop a keystroke waits for)."""
        shown = tuple(items)
        if shown == self._queue:
            return
        self._queue = shown
        queue = self.query_one(QueueList)
        highlighted = queue.highlighted
        queue.clear_options()
        for number, (item_id, text, placement, held) in enumerate(items, 1):
            flat = " ".join(safe_text(text).split())
            tag = "editing" if held else "steer" if placement == "next-step" else "queued"
            label = Content.assemble(
                (f"{number}. ", "$text-muted"),
                (f"[{tag}] ", "$text-muted" if tag == "queued" else "$warning"),
                flat if len(flat) <= 90 else flat[:89] + "…",
            )
            queue.add_option(Option(label, id=str(item_id)))
        if items:
            queue.highlighted = min(highlighted or 0, len(items) - 1)
        queue.display = bool(items)
