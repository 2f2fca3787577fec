"""A tool call and its result: the call and a one-line result until expanded.

Collapsed, a block is two lines: the call (tool name and its arguments in
brief) and, once the result event arrives, its status, size and first line.
Enter or a click on the call line expands it to the arguments and the result
in full (bounded: a huge result shows its first lines and says how many are
left). The full view is built on first expansion only, so opening a thread
with many tool calls renders no result it does not show. Name, arguments and
result come from the model and the tools: everything shown is made safe.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Collapsible, Static

from engine.safe_text import safe_text
from tui.widgets.tool_summary import MAX_LINES, call_line, full_text, result_line

__all__ = ["MAX_LINES", "ToolBlock"]


class ToolBlock(Collapsible):
    DEFAULT_CSS = """
    ToolBlock {
        margin: 0 0 0 2;
        padding: 0;
        border: none;
        background: transparent;
    }
    ToolBlock > CollapsibleTitle { padding: 0 1 0 0; }
    ToolBlock > .tool-summary { padding: 0 0 0 2; color: $text-muted; }
    ToolBlock > .tool-summary.-error { color: $error; }
    ToolBlock > Contents { padding: 0 0 0 2; }
    ToolBlock .tool-label { color: $text-muted; text-style: bold; }
    """

    def __init__(self, call_id: str, name: str, arguments: str, *, live: bool = False) -> None:
        super().__init__(title="", collapsed=True)
        self.call_id = call_id
        self.tool_name = safe_text(name)
        self.arguments = arguments
        self.result: str | None = None
        self._live = live
        self._built = False
        self._title.label = Content(call_line(name, arguments))
        self._summary = Static(Content(self._pending()), classes="tool-summary")

    def _pending(self) -> str:
        return "… running" if self._live else "… no result in the log"

    def compose(self) -> ComposeResult:
        yield self._title
        yield self._summary
        yield self.Contents()

    def result_line(self) -> str:
        """What the collapsed block says about the result."""
        return result_line(self.result) if self.result is not None else self._pending()

    def set_result(self, content: str) -> None:
        """The result event arrived (live, or found in the log): show it."""
        self.result = content
        line = self.result_line()
        self._summary.update(Content(line))
        self._summary.set_class(line.startswith("✗"), "-error")
        if self._built:
            self._built = False
            self.query_one(Collapsible.Contents).remove_children()
            self._build_body()

    def focus_title(self) -> None:
        self._title.focus()

    def on_collapsible_expanded(self, event: Collapsible.Expanded) -> None:
        if event.collapsible is self:
            self._build_body()

    def body_text(self) -> str:
        """The expanded view's text: arguments, then the result (bounded)."""
        parts = ["arguments", full_text(self.arguments or "{}"), "result"]
        parts.append(full_text(self.result) if self.result is not None else self._pending())
        return "\n".join(parts)

    def _build_body(self) -> None:
        if self._built:
            return
        self._built = True
        result = full_text(self.result) if self.result is not None else self._pending()
        self.query_one(Collapsible.Contents).mount_all(
            [
                Static(Content("arguments"), classes="tool-label"),
                Static(Content(full_text(self.arguments or "{}")), classes="tool-args"),
                Static(Content("result"), classes="tool-label"),
                Static(Content(result), classes="tool-result"),
            ]
        )
