"""A tool call and its result: the call and a one-line result until expanded.

Collapsed, a block is two lines: the call (tool name and its arguments in
brief) and, once the result event arrives, its status, size and first line.
Enter or a click on the call line expands it to the arguments and the result
in full (bounded: a huge result shows its first lines and says how many are
left). The full view is built on first expansion only, so opening a thread
with many tool calls renders no result it does not show. Name, arguments and
result come from the model and the tools: everything shown is made safe.

One widget drawing its own lines, not a Collapsible: that is a title, a
summary and a contents container per call (four widgets and their styles),
and a resumed thread full of tool calls spent most of its first frame
mounting them (12 blocks: ~110 ms against ~35 for one widget each).
"""

from __future__ import annotations

from typing import NamedTuple

from textual import events
from textual.binding import Binding
from textual.content import Content
from textual.geometry import Size
from textual.reactive import reactive
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import Visual
from textual.widget import Widget

from engine.util.safe_text import safe_text
from tui.widgets.placed_once import PlacedOnce
from tui.widgets.tool_summary import MAX_LINES, call_line, full_text, result_line

__all__ = ["MAX_LINES", "ToolBlock"]

_COLLAPSED, _EXPANDED = "▶", "▼"


class _Styles(NamedTuple):
    title: VisualStyle
    summary: VisualStyle
    error: VisualStyle
    widget: VisualStyle


class ToolBlock(PlacedOnce, Widget, can_focus=True):
    DEFAULT_CSS = """
    ToolBlock {
        width: 1fr;
        height: auto;
        margin: 0 0 0 2;
        pointer: pointer;
    }
    ToolBlock > .tool-block--summary { color: $text-muted; }
    ToolBlock > .tool-block--error { color: $error; }
    ToolBlock > .tool-block--label { color: $text-muted; text-style: bold; }
    ToolBlock:hover > .tool-block--title { background: $block-hover-background; }
    ToolBlock:focus > .tool-block--title {
        text-style: $block-cursor-text-style;
        background: $block-cursor-background;
        color: $block-cursor-foreground;
    }
    """
    COMPONENT_CLASSES = {
        "tool-block--title",
        "tool-block--summary",
        "tool-block--error",
        "tool-block--label",
    }
    BINDINGS = [
        Binding(
            "enter",
            "toggle_block",
            "Toggle",
            show=False,
            tooltip="on a tool call: show or hide its arguments and result in full",
        )
    ]

    collapsed: reactive[bool] = reactive(True, layout=True)
    """Two lines (the call, the result's summary), or the arguments and result in full."""

    def __init__(self, call_id: str, name: str, arguments: str, *, live: bool = False) -> None:
        super().__init__()
        self._bind(call_id, name, arguments, live)

    def rebind(self, call_id: str, name: str, arguments: str, *, live: bool = False) -> None:
        """Show another call, collapsed, as if built for it (the transcript recycles a
        widget its window let go of: tui.widgets.spares)."""
        self._bind(call_id, name, arguments, live)
        self.set_reactive(ToolBlock.collapsed, True)
        self.refresh(layout=True)

    def _bind(self, call_id: str, name: str, arguments: str, live: bool) -> None:
        self.call_id = call_id
        self.tool_name = safe_text(name)
        self.arguments = arguments
        self.result: str | None = None
        self._live = live
        self._call = call_line(name, arguments)
        self._body: tuple[object, Content] | None = None
        """The expanded view and the label style it was made with: made on first expansion,
        again when the result or the theme changes."""
        self._drawn: tuple[tuple[object, ...], list[Strip]] | None = None
        """The lines as last drawn and what they were drawn for (see `_lines`)."""
        self._summary: str | None = None
        """The result's one line (`result_line`), made once per result."""
        self._styles: _Styles | None = None
        """The styles the lines are drawn with, until the widget's styles change."""

    def _pending(self) -> str:
        return "… running" if self._live else "… no result in the log"

    def result_line(self) -> str:
        """What the collapsed block says about the result."""
        line = self._summary
        if line is None:
            line = result_line(self.result) if self.result is not None else self._pending()
            self._summary = line
        return line

    def set_result(self, content: str) -> None:
        """The result event arrived (live, or found in the log): show it."""
        self.result = content
        self._body = None
        self._summary = None
        self.refresh(layout=True)

    def notify_style_update(self) -> None:
        self._styles = None  # hover, focus, a theme: drawn with the styles of now
        super().notify_style_update()

    def focus_title(self) -> None:
        self.focus()

    def action_toggle_block(self) -> None:
        self.collapsed = not self.collapsed

    def on_click(self, event: events.Click) -> None:
        if event.y == 0:  # the call line, as a Collapsible's title
            event.stop()
            self.focus()
            self.action_toggle_block()

    def on_focus(self, event: events.Focus) -> None:
        self.refresh()

    def on_blur(self, event: events.Blur) -> None:
        self.refresh()

    def _shown(self) -> tuple[str, str]:
        """The arguments and the result as the expanded view shows them (bounded)."""
        result = full_text(self.result) if self.result is not None else self._pending()
        return full_text(self.arguments or "{}"), result

    def body_text(self) -> str:
        """The expanded view's text: arguments, then the result (bounded)."""
        arguments, result = self._shown()
        return "\n".join(["arguments", arguments, "result", result])

    def _full(self) -> Content:
        label = self.get_visual_style("tool-block--label")
        if self._body is None or self._body[0] != label:
            arguments, result = self._shown()
            labelled = (("arguments", label), "\n", arguments, "\n", ("result", label))
            self._body = (label, Content.assemble(*labelled, "\n", result))
        return self._body[1]

    def _lines(self, width: int) -> list[Strip]:
        """The block drawn at `width`, once per width, state and style: the call on one
        line (cut at the width, as a title), the summary and the full view indented by
        two cells on every line they wrap to."""
        styles = self._styles
        if styles is None:
            styles = self._styles = _Styles(
                self.get_visual_style("tool-block--title"),
                self.get_visual_style("tool-block--summary"),
                self.get_visual_style("tool-block--error"),
                self.visual_style,
            )
        title_style, _, _, style = styles
        line = self.result_line()
        summary_style = styles.error if line.startswith("✗") else styles.summary
        # A layout measures every block in the window: the key is compared, not made.
        key = (width, self.collapsed, line, styles, self._body)
        if self._drawn is not None and self._drawn[0] == key:
            return self._drawn[1]
        arrow = _COLLAPSED if self.collapsed else _EXPANDED
        title = Content.styled(f"{arrow} {self._call} ", title_style)
        lines = Visual.to_strips(self, title, width, 1, style)
        inner = Content.styled(line, summary_style)
        if not self.collapsed:
            inner = Content.assemble(inner, "\n", self._full())
        pad = Strip.blank(2, style.rich_style)
        indented = Visual.to_strips(self, inner, max(1, width - 2), None, style)
        lines.extend(Strip.join([pad, strip]) for strip in indented)
        self._drawn = (key, lines)
        return lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines(width)) if width else 2

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = self._lines(width)
        if 0 <= y < len(lines):
            return lines[y].extend_cell_length(width, self.visual_style.rich_style)
        return Strip.blank(width, self.visual_style.rich_style)
