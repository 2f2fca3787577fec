"""The one-line header: thread, model, and how full the context window is.

The context figure is the one part that must always show (it says when the
conversation is about to be compacted), so on a narrow terminal the other
parts give way first: the "thread"/"model" labels, then the model's name
(shortened, then dropped), and only last the thread id.
"""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from engine.util.safe_text import safe_text

GAP = "  "


def _shortened(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[: max(0, width - 1)] + "…" if width > 0 else ""


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

    def _left(self, room: int) -> Content:
        """The most of (name, thread, model) that fits in `room` cells."""
        thread = self.thread
        model = safe_text(self.model)  # a local model's label comes from a file name
        name = ("trove", "bold $accent")
        labelled = Content.assemble(
            name, GAP, ("thread ", "$text-muted"), thread, GAP, ("model ", "$text-muted"), model
        )
        if labelled.cell_length <= room:
            return labelled
        bare = Content.assemble(name, GAP, thread)
        model_room = room - bare.cell_length - len(GAP)
        if model_room >= 8:
            return Content.assemble(bare, GAP, (_shortened(model, model_room), "$text-muted"))
        if bare.cell_length <= room:
            return bare
        return Content(_shortened(thread, room))

    def render(self) -> Content:
        percent = f"context {self.context_used:.0%}"
        style = "bold $error" if self.context_used >= 0.8 else "$text-muted"
        width = self.size.width
        left = self._left(width - len(percent) - 1)
        pad = max(1, width - left.cell_length - len(percent) - 2)  # two cells spare if room
        return Content.assemble(left, " " * pad, (percent, style))
