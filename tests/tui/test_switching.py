"""The GIL's switch interval is short while start-up work runs in threads, given back
once the warm-up has built the model client, and short again while the transcript reads
and draws in a thread scrolling back (tui.startup.switching)."""

from __future__ import annotations

import sys

from tests.tui.conftest import settle, until
from tests.tui.test_pruned_lines import _long_thread, _page_back
from tui.screens import warm_up
from tui.startup import switching
from tui.widgets import transcript as transcript_module
from tui.widgets.transcript import Transcript


def test_starting_shortens_the_interval_and_settled_gives_back_the_one_found() -> None:
    found = sys.getswitchinterval()
    try:
        switching.starting()
        assert sys.getswitchinterval() == switching.START_UP
        switching.starting()  # twice: still gives back the first one found
        switching.settled()
        assert sys.getswitchinterval() == found
        switching.settled()  # idempotent
        assert sys.getswitchinterval() == found
    finally:
        sys.setswitchinterval(found)


async def test_the_warm_up_gives_the_interval_back_once_the_client_is_built(
    app_factory, monkeypatch
):
    found = sys.getswitchinterval()
    monkeypatch.setattr(warm_up, "WARM_AFTER", 0.01)
    app = app_factory()
    switching.starting()
    try:
        async with app.run_test(size=(100, 32)) as pilot:
            await settle(pilot)
            await until(pilot, lambda: sys.getswitchinterval() == found)
            assert app.runtime is not None and app.runtime.model._client is not None
    finally:
        switching.settled()
        sys.setswitchinterval(found)


def test_a_worker_holds_the_short_interval_until_the_last_one_lets_go() -> None:
    found = sys.getswitchinterval()
    try:
        with switching.short_while():
            assert sys.getswitchinterval() == switching.SHORT
            with switching.short_while():
                assert sys.getswitchinterval() == switching.SHORT
            assert sys.getswitchinterval() == switching.SHORT  # the outer one still holds
        assert sys.getswitchinterval() == found
        switching.starting()
        with switching.short_while():
            switching.settled()  # start-up ends while a worker runs: still short
            assert sys.getswitchinterval() == switching.SHORT
        assert sys.getswitchinterval() == found
    finally:
        switching.settled()
        sys.setswitchinterval(found)


async def test_scrolling_back_reads_and_draws_in_threads_with_the_short_interval(
    app_factory, tmp_path, monkeypatch
):
    """While a thread reads the events and draws the replies mounted next, each wake of
    the UI loop (a PageUp, a frame) waits less for the GIL; once the window stops
    growing, the interval is the one the process had."""
    found = sys.getswitchinterval()
    monkeypatch.setattr(transcript_module, "HIGH_WATER", 30)
    monkeypatch.setattr(transcript_module, "CHUNK", 20)
    seen: list[float] = []
    draw = transcript_module.draw_ahead

    def noted(template, replies):
        seen.append(sys.getswitchinterval())
        return draw(template, replies)

    monkeypatch.setattr(transcript_module, "draw_ahead", noted)
    app = _long_thread(app_factory, tmp_path, 80)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: sys.getswitchinterval() == found)  # the warm-up is over
        transcript = app.query_one(Transcript)
        start = transcript._start
        await _page_back(pilot, lambda: transcript._start < start - 20)
        assert seen and all(interval == switching.SHORT for interval in seen)
        await until(pilot, lambda: transcript._grower is None or transcript._grower.is_finished)
        assert sys.getswitchinterval() == found
