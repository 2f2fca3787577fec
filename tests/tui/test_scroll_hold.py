"""Scrolling back through a long thread holds full collections until the user pauses,
and a message pruned from the window lets go of its drawn lines at once.

A full collection walks every object the app keeps; one falling due every second of a
held PageUp held the UI loop each time. Counts and states, never times.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from engine import events as ev
from tests.tui.conftest import settle, until
from tui.live import collection
from tui.widgets import scroll_hold
from tui.widgets import transcript as transcript_module
from tui.widgets.chat_message import PastReply
from tui.widgets.transcript import Transcript

REPLY = "A reply with **bold** text and a list:\n\n- one\n- two\n\n" + "word " * 40


def _long_thread(app_factory, tmp_path, turns: int):
    from engine.threads.thread import Thread

    thread = Thread.create(tmp_path / "home", "local", "t-hold")
    for n in range(turns):
        thread.log.append(ev.UserMessage(text=f"question {n}"))
        thread.log.append(ev.AssistantMessage(content=f"{REPLY} {n}"))
    thread.close()
    app = app_factory()
    app.start_thread = "t-hold"
    return app


@pytest.fixture
def full_collections() -> Iterator[list[bool]]:
    """Each full collection as it starts: whether full collections were held then."""
    seen: list[bool] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            seen.append(collection.holding())

    gc.callbacks.append(record)
    yield seen
    gc.callbacks.remove(record)


async def test_paging_back_holds_full_collections_while_it_goes_on(
    app_factory, tmp_path, monkeypatch, full_collections
):
    monkeypatch.setattr(scroll_hold, "PAUSE", 3600.0)  # no pause in this test
    app = _long_thread(app_factory, tmp_path, 60)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert not collection.holding()
        full_collections.clear()
        await pilot.press("pageup", "pageup", "pageup")
        assert collection.holding()
        assert gc.get_threshold()[2] == collection.OUT_OF_REACH
        assert full_collections == []
        assert app.query_one(Transcript).scroll_y < app.query_one(Transcript).max_scroll_y
    assert not collection.holding()  # the app closed mid-scroll: its hold ended with it


async def test_at_the_pause_the_hold_ends_and_the_due_full_collection_runs(
    app_factory, tmp_path, monkeypatch, full_collections
):
    monkeypatch.setattr(scroll_hold, "PAUSE", 0.05)
    steps: list[str] = []
    hold, release = collection.hold_full, collection.release_full

    def holding() -> None:
        hold()
        steps.append("hold")

    def releasing() -> None:
        release()
        steps.append("release")

    monkeypatch.setattr(collection, "hold_full", holding)
    monkeypatch.setattr(collection, "release_full", releasing)
    before = gc.get_threshold()
    app = _long_thread(app_factory, tmp_path, 60)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        full_collections.clear()
        await pilot.press("pageup")
        await until(pilot, lambda: "release" in steps and not collection.holding())
        await until(pilot, lambda: bool(full_collections))
        assert steps == ["hold", "release"]
        assert full_collections == [False]  # run once nothing held them
        assert gc.get_threshold() == before


async def test_scrolling_on_without_a_pause_lets_a_full_collection_run_now_and_then(
    app_factory, tmp_path, monkeypatch, full_collections
):
    monkeypatch.setattr(scroll_hold, "LONGEST", 0.0)
    app = _long_thread(app_factory, tmp_path, 60)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await pilot.press("pageup")
        full_collections.clear()
        await pilot.press("pageup")
        # The hold has lasted longer than LONGEST: the due collection ran, and the
        # scrolling holds again from there.
        assert full_collections == [False]
        assert collection.holding()


async def test_a_reply_pruned_from_the_window_lets_go_of_its_drawn_lines(
    app_factory, tmp_path, monkeypatch
):
    monkeypatch.setattr(transcript_module, "HIGH_WATER", 30)
    monkeypatch.setattr(transcript_module, "CHUNK", 20)
    app = _long_thread(app_factory, tmp_path, 80)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)
        newest = [w for w in transcript._content() if isinstance(w, PastReply)]
        assert newest and all(w._drawn_lines is not None for w in newest[-3:])
        for _ in range(200):
            if all(not w.is_attached for w in newest):
                break
            await pilot.press("pageup")
        await settle(pilot)
        assert all(not w.is_attached for w in newest)
        for reply in newest:
            assert reply._drawn_lines is None and not reply._styles_cache._cache
