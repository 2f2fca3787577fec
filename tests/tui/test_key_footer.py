"""The footer rebuilds its keys only when the keys it shows change.

A running turn refreshes the screen's bindings as its state changes (and
focus moves refresh them too); Textual's Footer rebuilt every key each time,
a few full-screen layouts on the loop that echoes keystrokes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.widgets._footer import FooterKey

from devtools import scripted_server as s
from tests.tui.conftest import settle, type_text, until
from tui.widgets.key_footer import KeyFooter


def _keys(app) -> list[FooterKey]:
    return list(app.screen.query(FooterKey))


async def test_the_footer_keeps_its_keys_when_the_shown_bindings_are_equal(app_factory, server):
    server.script(s.text("a long answer", hold=True))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(KeyFooter)
        keys = _keys(app)
        rebuilds = footer.rebuilds
        for _ in range(3):  # refreshes that change nothing the footer shows
            app.screen.refresh_bindings()
            await pilot.pause()
        assert footer.rebuilds == rebuilds
        assert all(a is b for a, b in zip(_keys(app), keys, strict=True))

        await type_text(pilot, "tell me")
        await pilot.press("enter")
        await server.wait_requests(1)
        # "Esc Cancel" appears: a change, so the keys are rebuilt (changes before the
        # next frame come to one rebuild).
        await until(pilot, lambda: "chat('cancel')" in [k.action for k in _keys(app)])
        assert footer.rebuilds > rebuilds
        rebuilds, running = footer.rebuilds, _keys(app)
        app.screen.refresh_bindings()
        await pilot.pause()
        assert footer.rebuilds == rebuilds
        assert all(a is b for a, b in zip(_keys(app), running, strict=True))
        server.release()
        await settle(pilot)
        await until(pilot, lambda: "chat('cancel')" not in [k.action for k in _keys(app)])
        assert footer.rebuilds > rebuilds


async def test_settle_waits_while_the_footer_catches_up(app_factory, server):
    """A snapshot taken between a focus change and the footer's rebuild showed the keys of
    the old focus (a flaky inspector snapshot: "esc Cancel" where "esc Close" belonged).
    The rebuild is held back here, so `settle` must still be waiting for it."""
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(KeyFooter)
        held: list[Any] = []
        footer.call_after_refresh = lambda callback: held.append(callback) or True  # type: ignore[method-assign]
        await pilot.press("ctrl+o")  # the inspector takes the focus: other keys to show
        await until(pilot, lambda: footer.catching_up)
        waiting = asyncio.ensure_future(settle(pilot))
        for _ in range(20):
            await pilot.pause()
        assert not waiting.done()
        del footer.call_after_refresh
        for callback in held:
            footer.call_later(callback)
        await asyncio.wait_for(waiting, 10)
        assert not footer.catching_up
        assert "Close" in [k.description for k in _keys(app)]
