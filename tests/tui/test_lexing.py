"""The lexing worker's results reach the UI loop, and nothing reaches the terminal when
the loop has closed meanwhile (the app quit while a job ran)."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from tui.live import lexing


def _through() -> None:
    """Until every job sent before this one, and its callbacks, ran (one worker thread)."""
    lexing._shared().submit(lambda: None).result(timeout=30)


async def test_a_job_comes_back_on_the_loop_then_the_widget_hears_of_it() -> None:
    loop = asyncio.get_running_loop()
    heard: list[str] = []
    back = asyncio.Event()

    def shown() -> None:
        heard.append("shown")
        back.set()

    def done(result: tuple[str, bool]) -> None:
        heard.append(result[0])
        assert threading.current_thread() is threading.main_thread()

    off = lexing.OffLoop(loop, shown)
    off.submit(lambda: ("lexed", threading.current_thread() is threading.main_thread()), done)
    await asyncio.wait_for(back.wait(), 30)
    assert heard == ["lexed", "shown"]


def test_a_loop_closed_while_a_job_runs_drops_its_result_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.new_event_loop()
    running, release = threading.Event(), threading.Event()
    heard: list[object] = []

    def job() -> str:
        running.set()
        assert release.wait(30)
        return "lexed"

    off = lexing.OffLoop(loop, lambda: heard.append("shown"))
    with caplog.at_level(logging.DEBUG):
        off.submit(job, heard.append)
        assert running.wait(30)
        loop.close()  # the app quit while the job ran
        release.set()
        _through()
        off.submit(job, heard.append)  # and one sent after it closed
        _through()
    assert heard == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_the_warm_up_starts_the_lexing_thread_before_any_code_streams() -> None:
    """The first code block's job would start the thread on the UI loop (which waits for
    a new thread to run): start-up's warm-up starts it in its own worker thread."""
    from tui.screens.warm_up import prepare_first_turn

    def lexing_thread() -> bool:
        return any(t.name.startswith("trove-lexing") for t in threading.enumerate())

    if lexing._executor is not None:  # started by an earlier test: as at start-up, none
        lexing._executor.shutdown(wait=True)
        lexing._executor = None
    assert not lexing_thread()
    worker = threading.Thread(target=prepare_first_turn)
    worker.start()
    worker.join(timeout=60)
    assert lexing_thread()
