"""A full layout after a scroll arranges the screen once, and every widget's place is
what a fresh arrangement gives (tui.startup.full_map)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui.startup import full_map


class _Long(App[None]):
    def compose(self) -> ComposeResult:
        with VerticalScroll():
            for n in range(60):
                yield Static(f"line {n}\nsecond row", id=f"s{n}")


@pytest.fixture
def arranged(monkeypatch) -> Iterator[list[str]]:
    """Each full layout ("reflow") and each arrangement of the whole screen ("full")."""
    calls: list[str] = []
    arrange_root = Compositor._arrange_root

    def counted(self, root, size, visible_only=True):
        if not visible_only:
            calls.append("full")
        return arrange_root(self, root, size, visible_only=visible_only)

    monkeypatch.setattr(Compositor, "_arrange_root", counted)
    monkeypatch.setattr(Compositor, "reflow", Compositor.reflow)  # put back after the test
    monkeypatch.setattr(full_map, "_installed", False)
    yield calls


def _count_reflows(monkeypatch, calls: list[str]) -> None:
    reflow = Compositor.reflow

    def counted(self, parent, size):
        calls.append("reflow")
        return reflow(self, parent, size)

    monkeypatch.setattr(Compositor, "reflow", counted)


@pytest.mark.parametrize("installed", [True, False])
async def test_a_layout_after_a_scroll_arranges_the_screen_once(
    arranged, installed, monkeypatch
) -> None:
    if installed:
        full_map.install()
    _count_reflows(monkeypatch, arranged)
    app = _Long()
    async with app.run_test(size=(40, 12)) as pilot:
        scroll = app.query_one(VerticalScroll)
        scroll.scroll_to(y=40, animate=False)
        await pilot.pause()
        compositor = app.screen._compositor
        assert compositor._full_map_invalidated  # the scroll reflowed what is visible
        arranged.clear()
        await scroll.mount(Static("new", id="new"), before=0)  # a full layout follows
        await pilot.pause()
        far = app.query_one("#s59", Static)  # out of view: only the full map has it
        region = far.region
        reflows = arranged.count("reflow")
        assert reflows
        assert arranged.count("full") == (reflows if installed else 2 * reflows)
        fresh, _ = compositor._arrange_root(app.screen, compositor.size, visible_only=False)
        assert region == fresh[far].region
        assert all(
            compositor.find_widget(widget).region == geometry.region
            for widget, geometry in fresh.items()
        )
