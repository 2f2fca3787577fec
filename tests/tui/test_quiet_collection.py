"""Full garbage collections run at quiet moments: not while a reply streams, not while
keys arrive (unless long overdue), and the collector's own schedule comes back after."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from engine.util import collector
from tests.tui.conftest import LIMIT, settle, warmed_up
from tui.live import collection


def fall_due(times: int = 1) -> None:
    """Collect the middle generation until a full collection is due `times` over."""
    while collection.due() < times:
        gc.collect(1)


@pytest.fixture
def kept() -> Iterator[None]:
    before = gc.get_threshold()
    collection.keep_full()
    try:
        yield
    finally:
        collection.let_go_full()
    assert gc.get_threshold() == before


def test_a_due_collection_waits_for_the_keys_to_stop(kept: None) -> None:
    assert gc.get_threshold()[2] == collection.OUT_OF_REACH
    fall_due()
    assert not collection.collect_when_quiet(since_key=0.0)
    assert not collection.collect_when_quiet(since_key=collection.QUIET / 2)
    assert collection.due() >= 1
    assert collection.collect_when_quiet(since_key=collection.QUIET)
    assert collection.due() == 0
    assert not collection.collect_when_quiet(since_key=60.0)  # nothing due: nothing runs


def test_one_long_overdue_runs_while_keys_arrive(kept: None) -> None:
    fall_due(collection.OVERDUE - 1)
    assert not collection.collect_when_quiet(since_key=0.0)
    fall_due(collection.OVERDUE)
    assert collection.collect_when_quiet(since_key=0.0)
    assert collection.due() == 0


def test_none_runs_while_a_reply_streams_or_bulk_work_pauses_the_collector(kept: None) -> None:
    fall_due(collection.OVERDUE)
    collection.hold_full()
    try:
        assert not collection.collect_when_quiet(since_key=60.0)
    finally:
        collection.release_full()
    with collector.paused_gc():
        assert not collection.collect_when_quiet(since_key=60.0)
    assert gc.get_threshold()[2] == collection.OUT_OF_REACH  # the app still keeps them
    assert collection.collect_when_quiet(since_key=60.0)


async def test_the_app_runs_a_due_collection_once_the_keys_stop(
    app_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = gc.get_threshold()
    app = app_factory()
    checks: list[bool] = []
    checked = asyncio.Condition()
    run = collection.collect_when_quiet

    async def note(ran: bool) -> None:
        async with checked:
            checks.append(ran)
            checked.notify_all()

    def counted(since_key: float) -> bool:
        ran = run(since_key)
        asyncio.get_running_loop().create_task(note(ran))
        return ran

    async def checks_reach(count: int) -> None:
        async with checked:
            await asyncio.wait_for(checked.wait_for(lambda: len(checks) >= count), LIMIT)

    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await warmed_up(pilot)  # none runs before the warm-up's end (its freeze resets `due`)
        assert gc.get_threshold()[2] == collection.OUT_OF_REACH
        monkeypatch.setattr(collection, "collect_when_quiet", counted)
        app.typed_at = float("inf")  # a key "keeps arriving": only overdue ones may run
        fall_due()
        await checks_reach(len(checks) + 3)
        assert not any(checks) and collection.due() >= 1
        app.typed_at = 0.0  # the keys stopped long ago
        await checks_reach(len(checks) + 1)
        assert checks[-1] and collection.due() == 0
    assert gc.get_threshold() == before


async def test_no_full_collection_runs_before_the_warm_up_has_ended(
    app_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm-up's imports make objects it then freezes: a full collection due before its
    end waits for it (it would walk them all), then runs at the next quiet moment."""
    import tui.app
    from engine.model import ModelClient

    release = asyncio.Event()
    prepare = ModelClient.prepare

    async def held(client: ModelClient) -> None:
        await release.wait()
        await prepare(client)

    gates: list[bool] = []
    gate = tui.app.warmed

    def counted(screen: object) -> bool:
        gates.append(gate(screen))
        return gates[-1]

    monkeypatch.setattr(ModelClient, "prepare", held)
    monkeypatch.setattr(tui.app, "warmed", counted)
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        app.typed_at = 0.0  # nobody typing
        fall_due()
        seen = len(gates)
        deadline = asyncio.get_running_loop().time() + LIMIT
        while len(gates) < seen + 3:  # three checks of the app's, all before the warm-up's end
            assert asyncio.get_running_loop().time() < deadline, "the app never checked"
            await pilot.pause(collection.CHECK / 2)
        assert not any(gates) and collection.due() >= 1
        release.set()
        await warmed_up(pilot)  # its freeze leaves nothing due; what falls due now runs
        fall_due()
        deadline = asyncio.get_running_loop().time() + LIMIT
        while collection.due():
            assert asyncio.get_running_loop().time() < deadline, "no collection ran"
            await pilot.pause(collection.CHECK / 2)
