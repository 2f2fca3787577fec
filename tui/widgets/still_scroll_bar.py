"""The transcript's scroll bar: its rows drawn again only when they would change.

Textual repaints a scroll bar whenever the height of what it scrolls moves, and a
streamed reply moves it every frame. Yet the bar looks the same most of those
frames (the view follows the end, its thumb stays at the bottom, as thin as it gets),
and a repaint draws all of its rows again through the whole styling of a widget's
lines: it was the costliest widget on screen while a reply streamed. So when
asked for its rows, the bar gives the rows it drew last unless they would differ:
its size, its style (hover, grab, theme) or where Textual's own drawing of a bar
puts the thumb. (Deciding when the repaint is asked for would not do: as the view
follows the end, the bar's height and then its position change one after the
other, the thumb moving away and back before the screen is drawn.) And when they
do change, each different row is drawn once: most of a bar's rows are its track.
"""

from __future__ import annotations

from textual.geometry import Region, Size
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip
from textual.widget import Widget


class StillScrollBar(ScrollBar):
    """A `ScrollBar` that draws its rows again only when they would differ from the rows
    it drew last."""

    _painted: tuple[tuple[Size, object, tuple[object, ...]], list[Strip]] | None = None
    """How the bar looked when it last drew all its rows, and those rows."""

    def render_lines(self, crop: Region) -> list[Strip]:
        look = self._look()
        if look is None:
            return super().render_lines(crop)
        painted = self._painted
        if painted is None or painted[0] != look:
            # Drawn again whatever Textual's caches hold (of its drawing and of its rows):
            # the look may have changed with no repaint asked for (a position set
            # quietly), those caches then still the old ones. (The repaint this asks for
            # finds the rows drawn here.)
            self.refresh()
            painted = self._painted = (look, self._draw(look[2]))
        rows = painted[1][crop.y : crop.bottom]
        if crop.x or crop.width != self.size.width:
            rows = [row.crop(crop.x, crop.right) for row in rows]
        return rows

    def _draw(self, segments: tuple[object, ...]) -> list[Strip]:
        """The bar's rows, as Textual draws them; a vertical bar's row is its segment,
        so each different one is drawn once (a few: the track above and below the thumb,
        the thumb, its ends) and given for the rows alike."""
        width, height = self.size
        if not self.vertical or len(segments) != height:
            return super().render_lines(Region(0, 0, width, height))
        drawn: dict[object, Strip] = {}
        rows = []
        for y, segment in enumerate(segments):
            row = drawn.get(segment)
            if row is None:
                row = drawn[segment] = super().render_lines(Region(0, y, width, 1))[0]
            rows.append(row)
        return rows

    def _look(self) -> tuple[Size, object, tuple[object, ...]] | None:
        """The bar's size, style and rows' segments as Textual draws them (None: not
        drawn by Textual's bar, or not placed yet)."""
        if not self.is_attached or self.parent is None:
            return None
        bar = self.render()
        if not isinstance(bar, ScrollBarRender):
            return None
        size = self.size
        length, across = (size.height, size.width) if bar.vertical else (size.width, size.height)
        rows = bar.render_bar(
            size=length,
            virtual_size=bar.virtual_size,
            window_size=bar.window_size,
            position=bar.position,
            thickness=across or 1,  # as the bar draws itself: as thick as it is placed
            vertical=bar.vertical,
        )
        return size, bar.style, tuple(rows.segments)


def still_vertical_scrollbar(widget: Widget) -> ScrollBar:
    """`widget`'s vertical scroll bar, made as Textual makes it (for a `vertical_scrollbar`
    property), but a `StillScrollBar`."""
    bar = widget._vertical_scrollbar
    if bar is None:
        thickness = widget.scrollbar_size_vertical
        bar = widget._vertical_scrollbar = StillScrollBar(
            vertical=True, name="vertical", thickness=thickness
        )
        bar.display = False
        widget.app._start_widget(widget, bar)
    return bar
