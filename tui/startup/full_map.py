"""Textual's compositor without a second full arrangement after a layout that follows a
scroll.

A scroll reflows only what is visible and marks the compositor's full map (every
widget's place) stale. The next full layout (`Compositor.reflow`) builds exactly that
full map, but leaves the mark set, so the first widget that asks for its region
afterwards (every resized widget marks itself dirty, which reads its size) arranges the
whole screen once more. Scrolling back through a long thread does that in most
frames: a slice mounted after each PageUp. Here a full reflow clears the mark, as the
lazy full map does when it builds one (`bench/scroll.py` measures the frames).
A process-wide choice, so the front end makes it, once, before the app starts.
"""

from __future__ import annotations

from typing import Any

from textual._compositor import Compositor

_installed = False


def install() -> None:
    """Idempotent: the first call wraps `Compositor.reflow`."""
    global _installed
    if _installed:
        return
    _installed = True
    reflow = Compositor.reflow

    def reflow_and_keep(self: Compositor, parent: Any, size: Any) -> Any:
        result = reflow(self, parent, size)
        self._full_map_invalidated = False  # the map just built is the full map
        return result

    Compositor.reflow = reflow_and_keep  # type: ignore[method-assign]
