"""The collector's pause is counted across threads: overlapping pauses never end each other."""

from __future__ import annotations

import gc
import threading

from engine.util import collector
from engine.util.collector import paused_gc


def test_overlapping_pauses_end_only_when_the_last_one_ends() -> None:
    assert gc.isenabled()
    collector.hold()  # the UI loop's pause
    entered, leave = threading.Event(), threading.Event()

    def worker() -> None:
        with paused_gc():
            entered.set()
            leave.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert entered.wait(10)
        collector.release()  # the loop's pause ends first: the worker's still holds
        assert not gc.isenabled()
        leave.set()
        thread.join(10)
        assert gc.isenabled()
        assert not collector.holding()
    finally:
        leave.set()
        thread.join(10)
        gc.enable()


def test_a_collector_someone_else_disabled_stays_disabled() -> None:
    gc.disable()
    try:
        with paused_gc(), paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_unpaired_release_changes_nothing() -> None:
    collector.release()
    assert gc.isenabled()
    assert not collector.holding()
