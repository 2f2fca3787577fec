"""Toasts stay off the prompt: the rack sits under the title bar (app.tcss) and is never
taller than the room above the prompt and its / menu, whatever their height and the
terminal's."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widget import Widget

RACK = "#textual-toastrack"
"""Textual's id for the screen's toast rack."""


def keep_toasts_above(screen: Screen[Any], *below: Widget) -> None:
    """After each layout of `screen`, cap its toast rack's height so that it ends where the
    first shown of `below` begins."""

    def fit(_: Screen[Any]) -> None:
        racks = screen.query_children(RACK)  # a child of the screen: no walk of the transcript
        if not racks:
            return
        rack = racks.first()
        shown = [widget.region.y for widget in below if widget.display and widget.region.height]
        if shown:
            room = max(0, min(shown) - rack.styles.margin.top)
            if rack.styles.max_height is None or rack.styles.max_height.value != room:
                rack.styles.max_height = room
        elif rack.styles.max_height is not None:
            rack.styles.max_height = None

    screen.screen_layout_refresh_signal.subscribe(screen, fit)
