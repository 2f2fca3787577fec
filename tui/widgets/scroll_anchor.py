"""Scroll anchoring: the line the user reads stays put when widgets come or go above it.

Loading earlier messages mounts widgets above the view, and pruning the window
removes widgets above it; either moves everything below by their height. As
browsers do (CSS scroll anchoring), the first widget at the top of the view is
the anchor: after each new arrangement of the container the scroll offset moves
by as much as that widget moved, in the same layout pass that placed it, so no
frame ever shows the content jumped.
"""

from __future__ import annotations

from textual.layout import DockArrangeResult
from textual.widget import Widget


def anchor_shift(
    before: DockArrangeResult,
    after: DockArrangeResult,
    scroll_y: float,
    skip: tuple[type[Widget], ...] = (),
) -> int:
    """How many rows the widget at the top of the view (at `scroll_y` in `before`) moved
    down in `after` (0: none there, or it is gone). Widgets of the `skip` types are never
    the anchor (rows that stay at the top whatever is mounted below them)."""
    moved_to = {p.widget: p.region.y for p in after.placements}
    top: tuple[int, int] | None = None
    for placement in before.placements:
        region, widget = placement.region, placement.widget
        if region.bottom <= scroll_y or not region.height or isinstance(widget, skip):
            continue
        now = moved_to.get(widget)
        if now is not None and (top is None or region.y < top[0]):
            top = (region.y, now)
    return 0 if top is None else top[1] - top[0]
