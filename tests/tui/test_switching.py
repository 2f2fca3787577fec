"""The GIL's switch interval is short while start-up work runs in threads, and given
back once the warm-up has built the model client (tui.startup.switching)."""

from __future__ import annotations

import sys

from tests.tui.conftest import settle, until
from tui.screens import warm_up
from tui.startup import switching


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
