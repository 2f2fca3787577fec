"""A tool call and its result: one line until expanded.

Name, arguments and result come from the model and the tools: shown made safe.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Collapsible, Static

from engine.safe_text import safe_text


def _one_line(text: str, limit: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class ToolBlock(Collapsible):
    DEFAULT_CSS = """
    ToolBlock {
        margin: 0 0 0 2;
        padding: 0;
        border: none;
        background: transparent;
    }
    ToolBlock > Contents { padding: 0 0 0 2; }
    ToolBlock .tool-result { color: $text-muted; }
    """

    def __init__(self, call_id: str, name: str, arguments: str) -> None:
        name, arguments = safe_text(name), safe_text(arguments)
        super().__init__(title=f"⚙ {name}({_one_line(arguments)})", collapsed=True)
        self.call_id = call_id
        self.tool_name = name
        self.arguments = arguments
        self.result: str | None = None

    def on_mount(self) -> None:
        self.query_one(Collapsible.Contents).mount(
            Static(Content(self.arguments), classes="tool-args")
        )

    def set_result(self, content: str) -> None:
        content = safe_text(content)
        self.result = content
        self.title = (
            f"⚙ {self.tool_name}({_one_line(self.arguments, 40)}) → {_one_line(content, 40)}"
        )
        self.query_one(Collapsible.Contents).mount(Static(Content(content), classes="tool-result"))
