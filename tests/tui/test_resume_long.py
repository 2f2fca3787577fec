"""A long thread opened from its resume index: the newest events are shown from what the
open read; "load earlier" reads the older ones from the log, in order."""

from __future__ import annotations

from engine import events as ev
from engine.log import SessionLog
from engine.surface.kept import for_log, kept_parts
from engine.threads.thread import Thread
from tests.tui.conftest import settle
from tui.widgets import transcript as transcript_module
from tui.widgets.transcript import Transcript

COUNT = 3000


def _long_thread_closed_cleanly(home, thread_id: str) -> SessionLog:
    thread = Thread.create(home, "local", thread_id)
    log = thread.log
    for n in range(COUNT):
        log.append(ev.UserMessage(text=f"message {n}"))
    assert log.keep_index(*kept_parts(for_log(log), len(log.file_events)))
    thread.close()
    return log


async def test_a_long_thread_shows_its_end_and_reads_earlier_events_from_the_log(
    app_factory, tmp_path
):
    _long_thread_closed_cleanly(tmp_path / "home", "t-long")
    app = app_factory()
    app.start_thread = "t-long"
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        log = app.runtime.thread.log
        assert log.kept_events == COUNT  # opened from the index
        held_from = log.file_events.held_from
        assert 0 < held_from < COUNT - transcript_module.CHUNK
        stored = log.stored()
        assert stored is not None
        reads = stored.reads
        transcript = app.query_one(Transcript)
        while transcript._start > held_from - transcript_module.CHUNK:
            transcript.load_earlier()
            await settle(pilot)
        assert stored.reads > reads  # what the open did not hold came from the file
        shown = [w.text for w in transcript._content() if hasattr(w, "text")]
        first = int(shown[0].split()[1])
        assert first < held_from
        assert shown == [f"message {n}" for n in range(first, first + len(shown))]
