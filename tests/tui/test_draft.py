"""A prompt typed and not sent survives quitting (engine.threads.draft): the thread keeps it in its
log, and the next open puts it back in the box. Nothing the user typed is lost by Ctrl+Q."""

from __future__ import annotations

from engine import events as ev
from engine.threads.thread import Thread
from tests.tui.conftest import say, settle, type_text
from tui.widgets.prompt_input import PromptInput

HALF = "half a thought about the deploy"


def _drafts(home, tid: str = "t-snapshot") -> list[str]:
    thread = Thread.view(home, "local", tid, "read by the test")
    try:
        return [e.text for e in thread.log.events if isinstance(e, ev.PromptDraft)]
    finally:
        thread.close()


async def test_an_unsent_prompt_is_kept_at_quit_and_back_on_the_next_open(app_factory, tmp_path):
    home = tmp_path / "home"
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "hello")
        await type_text(pilot, HALF)
        await pilot.press("ctrl+q")
    assert app.resume_hint is not None
    assert _drafts(home) == [HALF]

    again = app_factory()
    again.start_thread = "t-snapshot"
    async with again.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert again.query_one(PromptInput).text == HALF
        await pilot.press("enter")  # sent now: the draft is spent
        await settle(pilot)
        await pilot.press("ctrl+q")
    assert _drafts(home) == [HALF, ""]

    third = app_factory()
    third.start_thread = "t-snapshot"
    async with third.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert third.query_one(PromptInput).text == ""
        await pilot.press("ctrl+q")
    assert _drafts(home) == [HALF, ""]  # nothing to keep, nothing appended


async def test_a_new_thread_with_only_an_unsent_prompt_is_kept_and_named(app_factory, tmp_path):
    """Nothing was ever sent, but the words typed make the thread worth keeping: it is
    written and the way back is printed."""
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, HALF)
        await pilot.press("ctrl+q")
    assert app.resume_hint == f"resume with: trove --home {tmp_path / 'home'} --thread t-snapshot"
    assert _drafts(tmp_path / "home") == [HALF]


async def test_a_read_only_view_prints_the_unsent_prompt_instead(app_factory, held_thread):
    """Another process writes the thread: the view cannot keep the draft in its log, so the
    app hands it to `tui.startup.run`, which prints it once the terminal is back."""
    app = app_factory()
    app.start_thread = "t-held"
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert app.runtime.thread.read_only
        await type_text(pilot, HALF)
        await pilot.press("ctrl+q")
    assert app.unsent_text == HALF
    assert not [e for e in held_thread.log.events if isinstance(e, ev.PromptDraft)]


async def test_a_full_disk_at_quit_prints_the_unsent_prompt_instead(app_factory, tmp_path):
    """The log cannot take the draft (no space left): the text is handed to `tui.startup.run` to
    print after the terminal, not dropped."""
    from tests.test_write_failures import Disk

    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "hello")
        await type_text(pilot, HALF)
        Disk(app.runtime.thread.log).full = True
        await pilot.press("ctrl+q")
    assert app.unsent_text == HALF
