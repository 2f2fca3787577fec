"""Messages wrap at a readable width on wide terminals (`ui.max_width`).

Long lines are hard to read, and a 200-column terminal makes every reply one.
The transcript's layout (`layout: stream`, fast for long threads) gives every
message the whole width and ignores `max-width`, so the transcript itself takes
the extra columns as right padding: the messages keep their left edge (where
the prompt's text starts), and the scrollbar and the mouse wheel still work at
the screen's right edge.
"""

from __future__ import annotations

EDGE = 1
"""The transcript's own padding on each side when there is no extra room."""
SCROLLBAR = 1


def readable_padding(width: int, max_width: int | None) -> tuple[int, int, int, int]:
    """The transcript's padding (top, right, bottom, left) at `width` columns, so that
    its messages are at most `max_width` columns wide (0 or None: the whole width)."""
    right = EDGE
    if max_width:
        right = max(EDGE, width - SCROLLBAR - EDGE - max_width)
    return (0, right, 0, EDGE)
