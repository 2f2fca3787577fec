"""A compaction checkpoint in the transcript: what was compacted, and where it went."""

from __future__ import annotations

from textual.binding import Binding
from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from engine.util.safe_text import safe_text
from tui.messages import OpenBatch
from tui.widgets.placed_once import PlacedOnce


class CheckpointBlock(PlacedOnce, Widget, can_focus=True):
    """Focus it and press Enter (or click) to open the batch in the inspector."""

    DEFAULT_CSS = """
    CheckpointBlock {
        height: auto;
        border: round $secondary;
        color: $text-secondary;
    }
    CheckpointBlock:focus { border: round $accent; }
    """
    BINDINGS = [
        Binding(
            "enter",
            "open",
            "Open in inspector",
            tooltip="on a compaction: open its archived originals in the inspector",
        )
    ]

    batch_id: reactive[int | None] = reactive(None)
    """The archive batch holding the originals (not `batch`: that is `Widget.batch()`)."""
    archive_note: reactive[str] = reactive("")

    def __init__(self, *, seq: int, count: int, summary: str) -> None:
        super().__init__()
        self.seq = seq
        self.count = count
        self.summary = safe_text(summary)  # the summary model's words, shown as data

    def render(self) -> Content:
        if self.batch_id is not None:
            where = f"archived as batch {self.batch_id}"
        else:
            where = self.archive_note or "archiving…"
        head = Content.assemble(
            ("◆ ", "$secondary"),
            (f"{self.count} messages compacted — {where}", "bold"),
            ("  (Enter: open in inspector)", "$text-muted"),
        )
        return Content.assemble(head, "\n", (self.summary, "$text-muted"))

    def on_click(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        self.post_message(OpenBatch(self.batch_id))
