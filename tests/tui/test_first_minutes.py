"""The first minutes in the app, with real keystrokes: a thread appears with its first
message, quitting says how to come back, /exit quits, /fork confirms, and prompts left
queued at quit come back in the strip and run one turn each."""

from __future__ import annotations

from pathlib import Path

from engine import events as ev
from engine.threads.thread import Thread
from tests.support import of_kind
from tests.tui.conftest import say, settle, type_text, until
from tui.widgets.chat_message import Notice
from tui.widgets.status_strip import QueueList


def _threads(home: Path) -> list[str]:
    root = home / "users" / "local" / "threads"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


async def test_quitting_without_a_message_leaves_nothing(app_factory, tmp_path):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "/help")
        await pilot.press("escape")
        await say(pilot, "/threads")
        await pilot.press("ctrl+q")
    assert _threads(tmp_path / "home") == []
    assert app.resume_hint is None


async def test_the_first_message_makes_the_thread_and_quitting_names_it(app_factory, tmp_path):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert _threads(tmp_path / "home") == []
        await say(pilot, "hello")
        assert _threads(tmp_path / "home") == ["t-snapshot"]
        await pilot.press("ctrl+q")
    assert app.resume_hint == f"resume with: trove --home {tmp_path / 'home'} --thread t-snapshot"


async def test_exit_quits(app_factory, tmp_path):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "hello")
        await type_text(pilot, "/exit")
        await pilot.press("enter")
        await until(pilot, lambda: app.return_code is not None)
        assert app.return_code == 0  # quit by /exit, before the test ends the app
    assert app.resume_hint == f"resume with: trove --home {tmp_path / 'home'} --thread t-snapshot"


async def test_fork_confirms_in_the_new_thread(app_factory, server):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "worth keeping")
        parent = app.runtime.thread.id
        await say(pilot, "/fork")
        await settle(pilot)
        child = app.runtime.thread.id
        assert child != parent
        notices = [n.text for n in app.query(Notice)]
        assert any(f"Forked into thread {child}" in text for text in notices), notices


async def test_fork_of_an_empty_thread_says_there_is_nothing_yet(app_factory, tmp_path):
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "/fork")
        await settle(pilot)
        notices = [n.text for n in app.query(Notice)]
        assert any("nothing to fork yet" in text for text in notices), notices
    assert _threads(tmp_path / "home") == []


async def test_prompts_queued_at_quit_come_back_and_run_one_turn_each(
    app_factory, server, tmp_path
):
    thread = Thread.create(tmp_path / "home", "local", "t-left")
    thread.log.append(ev.InboxQueued(text="left one", waking=True, placement="follow-up"))
    thread.log.append(ev.InboxQueued(text="left two", waking=True, placement="follow-up"))
    thread.close()
    app = app_factory()
    app.start_thread = "t-left"
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert app.query_one(QueueList).option_count == 2
        await say(pilot, "new prompt")
        await settle(pilot)
        events = app.runtime.thread.log.events
        turns = of_kind(events, ev.TurnStart)
        assert len(turns) == 3
        assert all(len(turn.items) == 1 for turn in turns)
        texts = [e.text for e in of_kind(events, ev.UserMessage)]
        assert texts == ["left one", "left two", "new prompt"]
        assert len(server.requests) == 3
        assert app.query_one(QueueList).option_count == 0
