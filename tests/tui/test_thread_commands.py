"""The thread commands in the app (issue 28, point 4): /delete asks in a dialog first,
/rename shows in the title bar, /threads N switches."""

from __future__ import annotations

from datetime import UTC, datetime

from devtools import scripted_server as s
from engine import events as ev
from engine.threads.thread import Thread
from tests.tui.conftest import say, settle, type_text, until
from tui.screens.confirm import ConfirmScreen
from tui.widgets.chat_message import Notice
from tui.widgets.title_bar import TitleBar


def _notices(app) -> str:
    return "\n".join(str(n.text) for n in app.screen.query(Notice))


def _other(home, thread_id: str, prompt: str) -> None:
    thread = Thread.create(home, "local", thread_id)
    moment = datetime.fromtimestamp(1_000, UTC)
    thread.log.clock = lambda: moment
    thread.log.append(ev.UserMessage(text=prompt))
    thread.close()


async def test_delete_asks_first_and_no_keeps_the_thread(app_factory, server, tmp_path):
    server.script(s.text("an answer"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "a question")
        folder = app.runtime.thread.dir
        await type_text(pilot, "/delete")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "Delete this thread t-snapshot (a question)" in app.screen.question
        await pilot.press("enter")  # the focus starts on No
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert folder.is_dir() and app.runtime.thread.id == "t-snapshot"
        assert "Not deleted." in _notices(app)


async def test_delete_yes_removes_the_thread_and_opens_a_new_one(app_factory, server, tmp_path):
    server.script(s.text("an answer"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "a question")
        folder = app.runtime.thread.dir
        await type_text(pilot, "/delete")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: app.runtime is not None and app.runtime.thread.id != folder.name)
        await settle(pilot)
        assert not folder.exists()
        assert "Deleted thread t-snapshot and its archive." in _notices(app)


async def test_rename_shows_in_the_title_bar_and_threads_n_switches(app_factory, server, tmp_path):
    server.script(s.text("an answer"))
    _other(tmp_path / "home", "20250101-older", "an older topic")
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "a question")
        await say(pilot, "/rename Trip planning")
        assert app.screen.query_one(TitleBar).thread == "Trip planning"
        await say(pilot, "/threads 2")
        await until(pilot, lambda: app.runtime.thread.id == "20250101-older")
        await settle(pilot)
        assert app.screen.query_one(TitleBar).thread == "20250101-older"
        await say(pilot, "/threads 1")
        await until(pilot, lambda: app.runtime.thread.id == "t-snapshot")
        await settle(pilot)
        assert app.screen.query_one(TitleBar).thread == "Trip planning"
