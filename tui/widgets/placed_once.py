"""A transcript widget that one layout places: its new size asks for no second one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.geometry import Size

if TYPE_CHECKING:
    from textual.widget import Widget

    _Base = Widget
else:
    _Base = object  # a mixin, not a node: Textual takes CSS from a widget's first base


class PlacedOnce(_Base):
    """Textual sets a resized widget's virtual size as a layout reactive, so every
    widget a layout sizes anew (each one mounted, the window growing a slice a frame)
    asks for another layout of the whole screen in the next frame, identical to the
    one that sized it. A widget that scrolls nothing of its own needs none.

    Put it before the widget class: `class UserMessage(PlacedOnce, Static)`."""

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        return super()._size_updated(size, virtual_size, container_size, layout=False)
