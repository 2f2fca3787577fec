"""Start-up pauses the cyclic collector and gives it back exactly once."""

from __future__ import annotations

import gc

from tui.startup import collection as startup


def test_pause_then_resume_restores_collection_and_freezes_what_exists() -> None:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    try:
        startup.pause_collection()
        assert not gc.isenabled()
        kept = [[] for _ in range(10)]  # made during start-up: frozen at resume
        startup.resume_collection()
        assert gc.isenabled()
        assert gc.get_freeze_count() >= frozen + len(kept)
        startup.resume_collection()  # idempotent
        assert gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()


def test_resume_never_enables_a_collector_someone_else_disabled() -> None:
    gc.disable()
    try:
        startup.pause_collection()
        startup.resume_collection()
        assert not gc.isenabled()
    finally:
        gc.enable()
