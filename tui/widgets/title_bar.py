"""The one-line header: thread, model, and how full the context window is."""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from engine.safe_text import safe_text


class TitleBar(Widget):
    DEFAULT_CSS = """
    TitleBar {
        height: 1;
        background: $panel;
        padding: 0 1;
    }
    """

    thread: reactive[str] = reactive("")
    model: reactive[str] = reactive("")
    context_used: reactive[float] = reactive(0.0)

    def render(self) -> Content:
        left = Content.assemble(
            ("trove", "bold $accent"),
            "  ",
            ("thread ", "$text-muted"),
            self.thread,
            "  ",
            ("model ", "$text-muted"),
            safe_text(self.model),  # a local model's label comes from a file name
        )
        percent = f"context {self.context_used:.0%}"
        style = "bold $error" if self.context_used >= 0.8 else "$text-muted"
        pad = max(1, self.size.width - left.cell_length - len(percent) - 2)
        return Content.assemble(left, " " * pad, (percent, style))
