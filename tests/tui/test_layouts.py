"""What a change to the transcript costs in layouts of the whole screen: a widget mounted
is placed by one, not followed by a second, identical one (`PlacedOnce`), and scrolling
back lays the window out about once per slice mounted and once per batch pruned."""

from __future__ import annotations

from typing import Any

from textual._compositor import Compositor
from textual.pilot import Pilot

from engine import events as ev
from tests.tui.conftest import app_on_thread, settle, until
from tui.widgets.transcript import Transcript


def _count_layouts(monkeypatch: Any) -> list[object]:
    layouts: list[object] = []
    reflow = Compositor.reflow

    def counted(self: Compositor, parent: Any, size: Any) -> Any:
        layouts.append(size)
        return reflow(self, parent, size)

    monkeypatch.setattr(Compositor, "reflow", counted)
    return layouts


async def _frames(pilot: Pilot[Any], count: int) -> None:
    """Let `count` more frames be drawn (a layout asked for in one runs in the next)."""
    app = pilot.app
    drawn: list[object] = []
    display = app._display

    def seen(screen: Any, renderable: Any) -> None:
        drawn.append(renderable)
        display(screen, renderable)

    app._display = seen  # type: ignore[method-assign]
    try:
        for n in range(1, count + 1):
            app.screen.refresh()
            await until(pilot, lambda n=n: len(drawn) >= n)  # type: ignore[misc]
    finally:
        del app._display


async def test_a_notice_and_a_message_mounted_cost_one_layout_each(
    app_factory, tmp_path, monkeypatch
):
    events = (ev.UserMessage(text=f"message {n}") for n in range(60))  # overflows: a scrollbar
    app = app_on_thread(app_factory, tmp_path / "home", "t-layouts", events)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)
        layouts = _count_layouts(monkeypatch)
        transcript.notice("one more line")
        await settle(pilot)
        await _frames(pilot, 3)
        assert len(layouts) == 1
        layouts.clear()
        transcript.mount_all(transcript._widgets_for(ev.UserMessage(text="typed", seq=999)))
        await settle(pilot)
        await _frames(pilot, 3)
        assert len(layouts) == 1


async def test_scrolling_back_lays_the_window_out_once_per_slice(
    app_factory, tmp_path, monkeypatch
):
    import tui.widgets.transcript as transcript_module

    monkeypatch.setattr(transcript_module, "HIGH_WATER", 40)
    monkeypatch.setattr(transcript_module, "CHUNK", 30)
    events = (ev.UserMessage(text=f"message {n}") for n in range(300))
    app = app_on_thread(app_factory, tmp_path / "home", "t-layouts", events)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        steps: list[bool] = []
        step = Transcript._grow_step

        def counted_step(self: Transcript) -> bool:
            grew = step(self)
            steps.append(grew)
            return grew

        monkeypatch.setattr(Transcript, "_grow_step", counted_step)
        prunes: list[int] = []
        remove_children = Transcript.remove_children

        def counted_prune(self: Transcript, selector: Any = "*") -> Any:
            prunes.append(1)
            return remove_children(self, selector)

        monkeypatch.setattr(Transcript, "remove_children", counted_prune)
        layouts = _count_layouts(monkeypatch)
        for _ in range(60):
            await pilot.press("pageup")
        await settle(pilot)
        await _frames(pilot, 3)
        mounted = sum(steps)
        assert mounted >= 10
        # Once per slice, and now and then once more: a key's frame, drawn at once
        # (tui.screens.input_echo), can fall between a slice's mount and the layout the
        # mount asks for. Two per slice (each slice placed twice) would fail.
        bound = mounted + mounted // 2 + len(prunes) + 2
        assert len(layouts) <= bound, (len(layouts), mounted, len(prunes))
