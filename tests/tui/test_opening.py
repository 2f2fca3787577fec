"""The thread named on the command line is opened beside the app's start-up (tui.startup.opening).

Whoever ends up with an opened thread must close it, or its writer lock
stays held: these tests hold that when the app fails before it takes the
open, and when the wait for the open is cancelled mid-replay.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from engine import events as ev
from engine.config import parse_config
from engine.surface import Surface
from engine.threads.lock import ThreadLockedError
from engine.threads.thread import Thread
from tests.test_plain_tty import Terminal
from tui.startup import opening as opening_module
from tui.startup.opening import Opening

LIMIT = 20.0
"""Seconds a wait on state may take before the test fails (a bound, never a delay)."""


def _thread(home, tid: str = "t-open") -> None:
    thread = Thread.create(home, "local", tid)
    thread.log.append(ev.UserMessage(text="the code is ZEBRA-4417"))
    thread.log.append(ev.AssistantMessage(content="noted: ZEBRA-4417"))
    thread.close()


def _free(home, tid: str = "t-open") -> bool:
    """Whether this process could take the thread's writer lock now."""
    try:
        thread = Thread.resume(home, "local", tid)
    except ThreadLockedError:
        return False
    thread.close()
    return True


def _hold_opens(monkeypatch) -> threading.Event:
    """Every open waits in its thread until the returned event is set (bounded by LIMIT)."""
    gate = threading.Event()
    real = opening_module.open_thread

    def held_open(*args, **kwargs):
        gate.wait(LIMIT)
        return real(*args, **kwargs)

    monkeypatch.setattr(opening_module, "open_thread", held_open)
    return gate


def _until(predicate) -> None:
    deadline = time.monotonic() + LIMIT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {predicate.__name__}"
        time.sleep(0.01)


def test_resume_in_a_real_terminal_shows_the_thread_and_quits_cleanly(env):
    """`trove --thread T` (the Textual app, at a pty): the early open is what it shows."""
    _thread(env.home)
    term = Terminal(env, "--thread", "t-open")
    try:
        term.wait_for(r"noted: ZEBRA-4417")
        term.type("\x11")  # Ctrl+Q
        term.wait_for(r"resume with: .*--thread t-open")
        assert term.proc.wait(timeout=LIMIT) == 0
    finally:
        term.close()
    assert _free(env.home)


def test_an_open_the_app_never_took_is_closed(tmp_path):
    """The app fails before its chat screen is up (a bad theme): the lock is released."""
    from engine.config import ConfigError
    from tui.startup.run import run_tui

    _thread(tmp_path)
    config = parse_config({"ui": {"theme": "no-such-theme"}}, source="c.yaml", env={})
    with pytest.raises(ConfigError):
        run_tui(config, tmp_path, thread_id="t-open")
    assert _free(tmp_path)


async def test_a_cancelled_wait_closes_the_thread_once_its_open_ends(tmp_path, monkeypatch):
    _thread(tmp_path)
    gate = _hold_opens(monkeypatch)
    config = parse_config({}, source="c.yaml", env={})
    opening = Opening(config, tmp_path, "t-open")
    assert opening.claim() and not opening.claim()
    waiting = asyncio.ensure_future(opening.thread())
    await asyncio.sleep(0)  # the wait has begun; the open is held
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    gate.set()
    await asyncio.to_thread(_until, lambda: _free(tmp_path))


async def test_the_surface_built_with_the_open_is_used_only_while_the_log_is_unchanged(tmp_path):
    _thread(tmp_path)
    config = parse_config({}, source="c.yaml", env={})
    opening = Opening(config, tmp_path, "t-open")
    opening.claim()
    thread = await opening.thread()
    try:
        surface = opening.surface(thread)
        assert surface is not None
        assert surface.entries == Surface.from_events(thread.log.events).entries
        assert [e.role for e in surface.entries] == ["user", "assistant"]
        thread.log.append(ev.UserMessage(text="one more"))
        assert opening.surface(thread) is None
    finally:
        thread.close()
    opening.discard()  # claimed already: nothing to close twice
    assert _free(tmp_path)


def _first_frames(app) -> list[list[str]]:
    """The transcript's message texts as each of the chat screen's frames is drawn."""
    frames: list[list[str]] = []
    chat = app.chat
    draw = chat._compositor_refresh

    def drawing() -> None:
        frames.append([w.text for w in chat.query("UserMessage, PastReply")])
        draw()

    chat._compositor_refresh = drawing
    return frames


async def test_an_open_already_over_is_in_the_chat_screens_first_frame(tmp_path, server):
    """The usual resume: the replay ends long before the chat screen is up. The thread is
    shown as the screen mounts, so its first frame holds it (before, an empty transcript was
    drawn first and the thread a whole frame later)."""
    from tests.tui.conftest import app_for, settle

    _thread(tmp_path)
    config = parse_config({}, source="c.yaml", env={})
    opening = Opening(config, tmp_path, "t-open")
    await asyncio.to_thread(_until, lambda: opening.opened() is not None)
    app = app_for(config, tmp_path, server, thread_id="t-open", early=opening)
    frames = _first_frames(app)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert frames[0] == ["the code is ZEBRA-4417", "noted: ZEBRA-4417"]
        assert app.runtime is not None and app.runtime.thread.id == "t-open"
    opening.discard()
    assert _free(tmp_path)


async def test_an_open_still_running_is_waited_for(tmp_path, server, monkeypatch):
    """The open is held past the screen's mount: the screen draws without it, then the app
    waits for the open and shows the thread it gave."""
    from tests.tui.conftest import app_for, settle, until

    _thread(tmp_path)
    gate = _hold_opens(monkeypatch)
    config = parse_config({}, source="c.yaml", env={})
    opening = Opening(config, tmp_path, "t-open")
    app = app_for(config, tmp_path, server, thread_id="t-open", early=opening)
    frames = _first_frames(app)
    async with app.run_test(size=(100, 32)) as pilot:
        await until(pilot, lambda: bool(frames))
        assert frames[0] == [] and app.runtime is None
        gate.set()
        await settle(pilot)
        assert frames[-1] == ["the code is ZEBRA-4417", "noted: ZEBRA-4417"]
    opening.discard()
    assert _free(tmp_path)


async def test_a_new_thread_is_in_the_chat_screens_first_frame(tmp_path, server):
    """A new thread is nothing on disk until its first message, so nothing is waited for:
    the screen's first frame already shows its welcome and has a runtime behind it."""
    from tests.tui.conftest import app_for, settle
    from tui.widgets.welcome import Welcome

    config = parse_config({}, source="c.yaml", env={})
    app = app_for(config, tmp_path, server)
    welcomed: list[bool] = []
    chat = app.chat
    draw = chat._compositor_refresh

    def drawing() -> None:
        welcomed.append(bool(chat.query(Welcome)) and app.runtime is not None)
        draw()

    chat._compositor_refresh = drawing
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert welcomed[0]
    assert not (tmp_path / "users").exists()  # and still nothing on disk
