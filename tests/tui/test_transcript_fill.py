"""Opening a thread draws about a screenful first; the rest of the chunk follows, in order."""

from __future__ import annotations

from engine import events as ev
from tests.tui.conftest import settle, until
from tui.widgets import transcript as transcript_module
from tui.widgets.transcript import Transcript


def _long_thread(home, thread_id: str, count: int) -> None:
    from engine.threads.thread import Thread

    thread = Thread.create(home, "local", thread_id)
    for n in range(count):
        thread.log.append(ev.UserMessage(text=f"message {n}"))
    thread.close()


async def test_the_newest_screenful_comes_first_then_the_chunk_above_it(app_factory, tmp_path):
    _long_thread(tmp_path / "home", "t-fill", 300)
    app = app_factory()
    app.start_thread = "t-fill"
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)

        def shown() -> list[str]:
            return [w.text for w in transcript._content()]

        everything = [f"message {n}" for n in range(300)]
        chunk = transcript_module.CHUNK
        assert shown() == everything[-(chunk - 1) :]  # the chunk's events, less the end-seed
        await transcript.remove_children()
        transcript.load(transcript.events)  # as on opening: only the newest part is built
        first = shown()
        assert 0 < len(first) < chunk - 1 and first == everything[-len(first) :]
        await until(pilot, lambda: not transcript.finishing())
        assert shown() == everything[-(chunk - 1) :]


async def test_loading_earlier_while_the_chunk_fills_keeps_the_log_order(
    app_factory, tmp_path, monkeypatch
):
    monkeypatch.setattr(transcript_module, "HIGH_WATER", 400)  # two chunks, none pruned
    _long_thread(tmp_path / "home", "t-fill-early", 400)
    app = app_factory()
    app.start_thread = "t-fill-early"
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)
        await transcript.remove_children()
        transcript.load(transcript.events)
        transcript.load_earlier()  # before the fill ran: the fill comes first, then a chunk
        await settle(pilot)
        shown = [w.text for w in transcript._content()]
        chunk = transcript_module.CHUNK
        assert shown == [f"message {n}" for n in range(400 - 2 * chunk + 1, 400)]
        assert not transcript.finishing()
