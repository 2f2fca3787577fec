"""Fixtures for driving the Textual app against the scripted server.

Snapshots are deterministic: a fixed thread id, a frozen clock, no cursor
blink and no animation. pytest-textual-snapshot (syrupy) writes to
tests/tui/__snapshots__, which is a link to the repository's snapshots/.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.keys import _character_to_key
from textual.pilot import Pilot

from engine import events as ev
from engine.config import Config, parse_config
from engine.threads.thread import Thread
from tests.support import client_for
from tui.app import TroveApp
from tui.live import collection
from tui.screens.warm_up import warmed
from tui.widgets.key_footer import KeyFooter
from tui.widgets.transcript import Transcript

FROZEN = 1000.0


def make_app(home: Path, server: Any, *, configured: bool = True, **compaction: Any) -> TroveApp:
    compaction.setdefault("keep_recent_tokens", 0)
    config = parse_config(
        {
            "model": {
                "base_url": server.base_url,
                "api_key": "k",
                "name": "scripted-model",
                "context_window": 4000,
                "max_retries": 0,
            },
            "compaction": compaction,
        },
        source="test",
        env={},
    )
    return app_for(config, home, server, configured=configured)


def app_for(config: Config, home: Path, server: Any, **kw: Any) -> TroveApp:
    """The app as the tests run it: the scripted server's client, a frozen clock, a fixed
    new-thread id and config label (stable snapshots), no animation."""
    kw.setdefault("config_label", "~/.config/trove/config.yaml")
    app = TroveApp(
        config,
        home,
        model=client_for(server),
        clock=lambda: FROZEN,
        new_thread_id="t-snapshot",
        **kw,
    )
    app.animation_level = "none"
    return app


LIMIT = 10.0
"""Seconds any one wait in a test may take before it fails (a bound, never a delay)."""
ROUNDS = 500
"""Rounds of the event loop `settle` allows before it reports what is still busy."""


async def _in_flight(app: TroveApp) -> list[Awaitable[Any]]:
    """What the app is still doing: an engine that is not idle, transcript renders (a
    reply's final render among them) and slash commands. Empty: nothing is in flight."""
    waits: list[Awaitable[Any]] = []
    runtime = app.runtime
    if runtime is not None:
        idle = asyncio.ensure_future(runtime.driver.when_idle())
        await asyncio.sleep(0)  # one step: an idle driver resolves at once
        if idle.done():
            idle.result()
        else:
            waits.append(idle)
    waits.extend(w.wait() for w in app.query_one(Transcript).finishing())
    waits.extend(w.wait() for w in app.workers if w.group == "commands" and not w.is_finished)
    return waits


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until the app is quiet: its thread is open, the engine idle, and no transcript
    render, command or footer rebuild is in flight after the widgets have handled their
    messages.

    It waits on that state (each wait bounded by LIMIT), not on a number of ticks: work
    that starts more work (a command that opens a thread, a reply whose end renders it
    again) is waited for however many rounds it takes.
    """
    app: TroveApp = pilot.app  # type: ignore[assignment]
    for _ in range(ROUNDS):
        await pilot.pause()
        if app.runtime is None:  # the thread is still being opened off the loop
            continue
        waits = await _in_flight(app)
        if not waits and any(f.catching_up for f in app.screen.query(KeyFooter)):
            continue  # the footer shown is still redrawing the keys the state now offers
        if not waits:
            return
        await asyncio.wait_for(asyncio.gather(*waits, return_exceptions=True), LIMIT)
    opened = "open" if app.runtime is not None else "still not open"
    raise AssertionError(f"the app never settled (its thread is {opened})")


async def until(pilot: Pilot[Any], ready: Callable[[], bool]) -> None:
    """Let the app run until `ready()` holds (a state wait, bounded by ROUNDS, no sleeps)."""
    for _ in range(ROUNDS):
        if ready():
            return
        await pilot.pause()
    raise AssertionError("the app never reached the awaited state")


async def warmed_up(pilot: Pilot[Any]) -> None:
    """Until the app's warm-up has ended (start-up's last change, a second or more after
    its thread opened; `until`'s rounds can pass sooner): a state wait, bounded by LIMIT."""
    app: TroveApp = pilot.app  # type: ignore[assignment]
    deadline = asyncio.get_running_loop().time() + LIMIT
    while not warmed(app.chat):
        assert asyncio.get_running_loop().time() < deadline, "the warm-up never ended"
        await pilot.pause(0.05)


async def type_text(pilot: Pilot[Any], text: str) -> None:
    """Type `text` a key at a time, each handled before the next is sent, as `pilot.press`
    does; but the wait is on the queues (the app's, which hands the key on, then the
    widgets'), not on the process looking idle for 20 ms twice a key."""
    app = pilot.app
    driver = app._driver
    assert driver is not None
    for ch in text:
        key = _character_to_key(ch) if len(ch) == 1 and not ch.isalnum() else ch
        key_event = events.Key(key, ch)
        key_event.set_sender(app)
        driver.send_message(key_event)
        await pilot._wait_for_screen()  # the app has handed it to the focused widget
        await pilot._wait_for_screen()  # which has handled it
    await pilot.pause()


async def say(pilot: Pilot[Any], text: str) -> None:
    await type_text(pilot, text)
    await pilot.press("enter")
    await settle(pilot)


@pytest.fixture
def app_factory(
    tmp_path: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., TroveApp]:
    # The welcome line names the data dir with the home as "~": the same in every snapshot.
    monkeypatch.setenv("HOME", str(tmp_path))

    def factory(**kw: Any) -> TroveApp:
        return make_app(tmp_path / "home", server, **kw)

    return factory


def app_on_thread(
    app_factory: Callable[..., TroveApp], home: Path, thread_id: str, events: Iterable[ev.LogEvent]
) -> TroveApp:
    """An app that opens thread `thread_id`, written (and closed) with `events` first."""
    thread = Thread.create(home, "local", thread_id)
    for event in events:
        thread.log.append(event)
    thread.close()
    app = app_factory()
    app.start_thread = thread_id
    return app


@pytest.fixture
def held_thread(tmp_path: Path) -> Iterator[Thread]:
    """Thread "t-held", written by "another process": this one holds its writer lock (and
    one message) for the test, so the app can only open a read-only view of it."""
    holder = Thread.create(tmp_path / "home", "local", "t-held")
    holder.log.append(ev.UserMessage(text="written by the other process"))
    try:
        yield holder
    finally:
        holder.close()


@pytest.fixture(autouse=True)
def no_held_collections() -> Iterator[None]:
    """Every app a test ran has let go of full collections by the time it is gone: a hold
    left behind would keep this process's oldest generation from collecting."""
    yield
    assert not collection.holding(), "an app ended with full collections still held"
