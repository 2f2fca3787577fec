"""The archive inspector beside the chat: built on first use, shown and hidden.

It costs nothing at launch: the inspector's modules are imported and its
widget mounted the first time it is shown. Below `NARROW` columns it takes the
whole screen (the screen's `-inspector-full` class, chat.tcss).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.dom import DOMNode
from textual.screen import Screen

from engine.runtime import Runtime
from tui.widgets.prompt_input import PromptInput

if TYPE_CHECKING:
    from tui.inspector import ArchiveInspector

NARROW = 100
"""Below this width the inspector takes the whole screen: half of 80 columns is too
narrow to read an archive page beside the chat."""


class InspectorPane:
    def __init__(
        self, screen: Screen[Any], busy: Callable[[], bool], changed: Callable[[], None]
    ) -> None:
        self._screen = screen
        self._busy = busy
        """Whether something runs that Esc cancels (then Esc in the pane does that)."""
        self._changed = changed
        """Called when the pane is shown or hidden (the keys on offer change)."""
        self.widget: ArchiveInspector | None = None

    @property
    def shown(self) -> bool:
        return bool(self.widget is not None and self.widget.display)

    def holds(self, node: DOMNode) -> bool:
        """Whether `node` is the inspector or inside it."""
        inspector = self.widget
        return inspector is not None and (node is inspector or inspector in node.ancestors)

    def bind(self, runtime: Runtime) -> None:
        if self.widget is not None:
            self.widget.bind_runtime(runtime)

    def refresh_data(self) -> None:
        if self.widget is not None:
            self.widget.refresh_data()

    async def _ensure(self, runtime: Runtime | None) -> ArchiveInspector:
        if self.widget is None:
            from tui.inspector import ArchiveInspector

            widget = ArchiveInspector(self._busy, id="inspector")
            widget.display = False
            self.widget = widget
            await self._screen.query_one("#body").mount(widget)
            if runtime is not None:
                widget.bind_runtime(runtime)
        return self.widget

    async def show(self, show: bool, runtime: Runtime | None) -> None:
        inspector = await self._ensure(runtime) if show else self.widget
        if inspector is None:
            return
        inspector.display = show
        self._fit()
        self._changed()
        if show:
            inspector.refresh_data()
            inspector.focus_default()
        else:
            self._screen.query_one(PromptInput).focus()

    async def open_batch(self, batch: int | None, runtime: Runtime | None) -> None:
        """A checkpoint's Enter: the pane, on that batch's sources."""
        await self.show(True, runtime)
        assert self.widget is not None
        self.widget.open_batch(batch)

    def resized(self) -> None:
        if self.widget is not None:
            self._fit()

    def _fit(self) -> None:
        screen = self._screen
        screen.set_class(self.shown and screen.app.size.width < NARROW, "-inspector-full")
