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


def _drawn(footer: KeyFooter) -> list[tuple[Any, ...]]:
    keys = footer.query(FooterKey)
    return [(k.key, k.key_display, k.description, k.action, k._disabled, k.classes) for k in keys]


async def _as_rebuilt(pilot: Any, footer: KeyFooter) -> list[tuple[Any, ...]]:
    """What a whole rebuild of the footer draws now (Textual's own compose)."""
    with footer._context():  # as when the footer recomposes itself
        await footer.recompose()
    await pilot.pause()
    return _drawn(footer)


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
        # "Esc Cancel" appears: that key alone is mounted, the others stay as they are.
        await until(pilot, lambda: "chat('cancel')" in [k.action for k in _keys(app)])
        await settle_footer(pilot, footer)
        assert footer.rebuilds == rebuilds and footer.patches == 1
        running = _keys(app)
        assert [k for k in running if k.action != "chat('cancel')"] == keys
        patched, columns = _drawn(footer), footer.styles.grid_size_columns
        assert patched == await _as_rebuilt(pilot, footer)
        assert columns == footer.styles.grid_size_columns
        rebuilds, running = footer.rebuilds, _keys(app)
        app.screen.refresh_bindings()
        await pilot.pause()
        assert footer.rebuilds == rebuilds
        assert all(a is b for a, b in zip(_keys(app), running, strict=True))
        server.release()
        await settle(pilot)
        await until(pilot, lambda: "chat('cancel')" not in [k.action for k in _keys(app)])
        await settle_footer(pilot, footer)
        assert footer.rebuilds == rebuilds and footer.patches == 2
        assert [k for k in _keys(app)] == [k for k in running if k.action != "chat('cancel')"]
        assert _drawn(footer) == await _as_rebuilt(pilot, footer)


async def settle_footer(pilot: Any, footer: KeyFooter) -> None:
    await until(pilot, lambda: not footer.catching_up)


async def test_keys_that_come_go_and_change_state_are_drawn_as_a_rebuild_would(app_factory, server):
    """Queued prompts bring "Tab Queue"; the queue list taking the focus changes others:
    whatever the change, the footer patched in place draws what a rebuild would."""
    server.script(s.text("a long answer", hold=True))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(KeyFooter)
        await type_text(pilot, "first")
        await pilot.press("enter")
        await server.wait_requests(1)
        await type_text(pilot, "second")
        await pilot.press("enter")  # queued behind the running reply
        await until(pilot, lambda: not footer.catching_up and footer.patches >= 2)
        actions = [k.action for k in _keys(app)]
        assert _drawn(footer) == await _as_rebuilt(pilot, footer)
        await pilot.press("tab")  # to the queue: the keys are the queue's
        await until(
            pilot, lambda: not footer.catching_up and [k.action for k in _keys(app)] != actions
        )
        assert _drawn(footer) == await _as_rebuilt(pilot, footer)
        server.release()
        await settle(pilot)


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
