"""The transcript's scroll bar repaints only when it would look different, and always
looks as Textual's own bar does.

Two scrolled columns side by side get the same content, growing a row at a time as
a streamed reply's does, with the view following the end, scrolled back, hovered:
one has Textual's bar, the other the transcript's (`StillScrollBar`). After each
step, the rows each bar has drawn (its cache of lines, what the screen shows) must
be the same; and once the thumb is as thin as it gets, following the end, the
transcript's bar must have drawn far fewer rows.
"""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.geometry import Region
from textual.scrollbar import ScrollBar
from textual.widget import Widget
from textual.widgets import Static

from tui.widgets.still_scroll_bar import StillScrollBar, still_vertical_scrollbar


class _Still(VerticalScroll):
    @property
    def vertical_scrollbar(self) -> ScrollBar:
        return still_vertical_scrollbar(self)


class _Columns(App[None]):
    CSS = "VerticalScroll { width: 1fr; scrollbar-size-vertical: 1; }"

    def compose(self) -> ComposeResult:
        with Horizontal():
            with VerticalScroll(id="stock"):
                yield Static(id="stock-body")
            with _Still(id="still"):
                yield Static(id="still-body")


def drawn(bar: ScrollBar) -> list[Any]:
    """The rows the bar has drawn (its lines as the screen has them)."""
    return bar.render_lines(Region(0, 0, bar.size.width, bar.size.height))


async def test_the_scroll_bar_repaints_only_when_it_would_look_different(monkeypatch) -> None:
    rows: dict[str, int] = {"stock": 0, "still": 0}
    render_line = ScrollBar.render_line

    def counted(bar: ScrollBar, y: int) -> Any:
        rows["still" if isinstance(bar, StillScrollBar) else "stock"] += 1
        return render_line(bar, y)

    monkeypatch.setattr(ScrollBar, "render_line", counted)
    app = _Columns()
    async with app.run_test(size=(60, 20)) as pilot:
        views = [app.query_one("#stock", VerticalScroll), app.query_one("#still", VerticalScroll)]
        bodies = [app.query_one("#stock-body", Widget), app.query_one("#still-body", Widget)]
        assert isinstance(views[1].vertical_scrollbar, StillScrollBar)

        for view in views:
            view.anchor()  # follows the end as it grows, as the transcript does

        async def step(height: int, **at: Any) -> None:
            for view, body in zip(views, bodies, strict=True):
                body.styles.height = height
                if "y" in at:
                    view.scroll_to(y=at["y"], animate=False, immediate=True)
                elif at.get("end"):
                    view.scroll_end(animate=False, immediate=True)
                    view.anchor()
                view.vertical_scrollbar.mouse_over = at.get("hover", False)
            await pilot.pause()
            stock, still = (view.vertical_scrollbar for view in views)
            state = [
                (b.window_virtual_size, b.window_size, b.position, b.size) for b in (stock, still)
            ]
            assert drawn(still) == drawn(stock), f"height {height}, {at}, {state}"

        for height in range(25, 400, 25):  # a reply streaming, the view at its end
            await step(height)
        rows.update(stock=0, still=0)
        for height in range(400, 1000, 15):  # the thumb as thin as it gets
            await step(height)
        following = dict(rows)
        await step(1000, end=False, y=100)  # scrolled back
        await step(1003, end=False, y=100)
        await step(1003, end=False, y=100, hover=True)
        await step(1006, end=False, y=100, hover=True)
        await step(1009, end=True)
        await step(1012)
        # Moved without a repaint asked for (as the transcript keeps a scrolled view's
        # place), drawn by a repaint of the screen, then repainted as usual.
        for view in views:
            view.anchor(False)
            view.scroll_to(y=100, animate=False, immediate=True)
        await pilot.pause()
        for view in views:
            view.vertical_scrollbar.set_reactive(ScrollBar.position, 300)
            drawn(view.vertical_scrollbar)  # the screen drawn meanwhile (not asserted:
            # Textual's bar shows its old rows until its repaint)
        for view in views:
            view.vertical_scrollbar.refresh()
        await pilot.pause()
        stock, still = (view.vertical_scrollbar for view in views)
        assert drawn(still) == drawn(stock), "moved without a repaint"
        assert following["still"] * 10 < following["stock"], following
