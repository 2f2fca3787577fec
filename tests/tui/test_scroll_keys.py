"""The transcript scrolls from the prompt: PageUp/PageDown a page, Ctrl+Home to the
thread's start, Ctrl+End to the newest output; the focus and the draft stay in the prompt."""

from __future__ import annotations

from engine import events as ev
from tests.tui.conftest import app_on_thread, settle, type_text, until
from tui.widgets.prompt_input import PromptInput
from tui.widgets.transcript import Transcript


def _long_thread(app_factory, tmp_path, messages: int):
    """An app that opens thread t-scroll, of `messages` user messages ("message 0", …)."""
    events = (ev.UserMessage(text=f"message {n}") for n in range(messages))
    return app_on_thread(app_factory, tmp_path / "home", "t-scroll", events)


async def test_page_keys_in_the_prompt_scroll_the_transcript(app_factory, tmp_path):
    app = _long_thread(app_factory, tmp_path, 120)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)
        prompt = app.query_one(PromptInput)
        await type_text(pilot, "draft")
        assert transcript.at_end and prompt.has_focus
        bottom = transcript.scroll_y
        await pilot.press("pageup")
        await until(pilot, lambda: transcript.scroll_y < bottom)
        assert prompt.has_focus and prompt.text == "draft"
        up = transcript.scroll_y
        await pilot.press("pageup")
        await until(pilot, lambda: transcript.scroll_y < up)
        higher = transcript.scroll_y
        await pilot.press("pagedown")
        await until(pilot, lambda: transcript.scroll_y > higher)
        assert not transcript.at_end  # read back: new output would not pull the view
        await pilot.press("ctrl+end")
        await until(pilot, lambda: transcript.at_end)
        assert prompt.has_focus and prompt.text == "draft"


async def test_ctrl_home_shows_the_threads_first_message_and_ctrl_end_the_newest(
    app_factory, tmp_path, monkeypatch
):
    import tui.widgets.transcript as transcript_module

    monkeypatch.setattr(transcript_module, "CHUNK", 30)
    app = _long_thread(app_factory, tmp_path, 300)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)

        def texts() -> list[str]:
            return [w.text for w in transcript._content() if hasattr(w, "text")]

        assert texts()[-1] == "message 299"
        await pilot.press("ctrl+home")
        await until(pilot, lambda: bool(texts()) and texts()[0] == "message 0")
        await settle(pilot)
        assert transcript.scroll_y == 0 and not transcript.query("#load-earlier")
        assert app.query_one(PromptInput).has_focus
        await pilot.press("ctrl+end")
        await until(pilot, lambda: bool(texts()) and texts()[-1] == "message 299")
        await settle(pilot)
        await until(pilot, lambda: transcript.at_end)


async def test_the_new_output_line_shows_while_a_reply_streams_below_the_view(app_factory, server):
    """Scrolled up from the prompt after the reply began: its growth below says so."""
    from devtools import scripted_server as s
    from tests.tui.test_focus import fill_the_view

    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await fill_the_view(pilot, server)
        transcript = app.query_one(Transcript)
        marker = app.query_one("#new-output")
        server.script(s.text("first words " + "and then much more " * 200, hold=True))
        await type_text(pilot, "stream")
        await pilot.press("enter")
        await until(pilot, lambda: transcript._reply is not None)
        assert not marker.display  # at the end: the reply is in view
        await pilot.press("pageup")
        await until(pilot, lambda: not transcript.at_end)
        server.release()
        await until(pilot, lambda: bool(marker.display))
        await settle(pilot)
        assert marker.display and not transcript.at_end
        await pilot.press("ctrl+end")
        await until(pilot, lambda: transcript.at_end and not marker.display)


def _top_line(transcript: Transcript) -> tuple[object, int]:
    """The widget at the top row of the transcript's view, and how far above (or below)
    that row its first line is: what the user reads there."""
    from tui.widgets.load_button import LoadButton

    top = transcript.scroll_y
    for widget in transcript._content():
        region = widget.virtual_region
        if region.bottom > top and region.height and not isinstance(widget, LoadButton):
            return widget, region.y - int(top)
    raise AssertionError("nothing is shown")


async def _load_earlier_reading(pilot, transcript: Transcript, chunk: int) -> None:
    """With the view 3 rows down, load a chunk earlier: the line at the top of the view is
    the same widget, showing the same message, at every frame and once it is mounted."""
    transcript.scroll_to(y=3, animate=False, immediate=True)
    await until(pilot, lambda: transcript.scroll_y == 3)
    read = _top_line(transcript)
    text = read[0].text
    start = transcript._start
    transcript.load_earlier()
    assert transcript._start == start  # nothing is built on the caller's turn
    while transcript.finishing():
        await pilot.pause()
        assert _top_line(transcript) == read  # at every frame, not only at the end
    await settle(pilot)
    assert transcript._start == start - chunk
    assert _top_line(transcript) == read and read[0].text == text


async def test_loading_earlier_keeps_the_line_being_read_and_mounts_a_slice_a_frame(
    app_factory, tmp_path, monkeypatch
):
    import tui.widgets.transcript as transcript_module

    monkeypatch.setattr(transcript_module, "CHUNK", 60)
    app = _long_thread(app_factory, tmp_path, 400)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)
        batches: list[int] = []
        mount_all = transcript.mount_all

        def counted(widgets, *args, **kwargs):
            widgets = list(widgets)
            batches.append(len(widgets))
            return mount_all(widgets, *args, **kwargs)

        monkeypatch.setattr(transcript, "mount_all", counted)
        await _load_earlier_reading(pilot, transcript, 60)
        assert transcript.scroll_y > 3  # the earlier messages are above, out of view
        assert batches and max(batches) <= transcript_module.SLICE


async def test_a_chunk_larger_than_the_window_never_prunes_the_lines_being_read(
    app_factory, tmp_path, monkeypatch
):
    """Loading earlier mounts a whole chunk above the view; with more widgets in it than
    the window keeps, the window prunes its far end, never what is on screen."""
    import tui.widgets.transcript as transcript_module

    monkeypatch.setattr(transcript_module, "CHUNK", 60)
    monkeypatch.setattr(transcript_module, "HIGH_WATER", 30)
    monkeypatch.setattr(transcript_module, "TRIM_SLACK", 4)
    app = _long_thread(app_factory, tmp_path, 400)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)
        await _load_earlier_reading(pilot, transcript, 60)
        # The far end went: the window is back near its mark once the view allows it.
        assert len(transcript._content()) <= 60 + transcript_module.SLICE + 40


async def test_paging_back_and_forth_releases_widgets_past_the_mark_at_both_ends(
    app_factory, tmp_path, monkeypatch
):
    """PageUp held from the prompt walks back to the first message, the window never
    holding more than the mark and its slack; the newest are released and PageDown brings
    them back."""
    import tui.widgets.transcript as transcript_module

    monkeypatch.setattr(transcript_module, "HIGH_WATER", 40)
    monkeypatch.setattr(transcript_module, "CHUNK", 30)
    app = _long_thread(app_factory, tmp_path, 300)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)

        def texts() -> list[str]:
            return [w.text for w in transcript._content() if hasattr(w, "text")]

        most = 0
        for _ in range(400):
            if texts()[0] == "message 0" and transcript.scroll_y == 0:
                break
            await pilot.press("pageup")
            most = max(most, len(transcript._content()))
        assert texts()[0] == "message 0" and transcript.scroll_y == 0
        assert most <= 40 + transcript_module.TRIM_SLACK + transcript_module.SLICE
        assert "message 299" not in texts() and transcript.query("#load-newer")
        assert len(transcript._tools) + len(transcript._checkpoints) <= len(texts())
        for _ in range(400):
            if texts()[-1] == "message 299" and transcript.at_end:
                break
            await pilot.press("pagedown")
            most = max(most, len(transcript._content()))
        assert texts()[-1] == "message 299" and transcript.at_end
        assert "message 0" not in texts() and transcript.query("#load-earlier")
        assert most <= 40 + transcript_module.TRIM_SLACK + transcript_module.SLICE
        assert app.query_one(PromptInput).has_focus


async def test_the_new_output_line_stays_hidden_while_the_view_follows_the_end(
    app_factory, server, monkeypatch
):
    """A turn's output (a tool block, a streamed reply) arrives while the view follows the
    end: the line never shows, not even for the frame before the view scrolls to it."""
    from devtools import scripted_server as s
    from tui.widgets.new_output import NewOutputMarker

    shown: list[bool] = []
    show = NewOutputMarker.show

    def noted(marker: NewOutputMarker, on: bool) -> None:
        shown.append(on)
        show(marker, on)

    monkeypatch.setattr(NewOutputMarker, "show", noted)
    note = {"key": "code", "content": "a long note " * 40}
    server.script(s.tool_calls([("task_note", note)]), s.text("and then much more " * 300))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await type_text(pilot, "remember the code")
        await pilot.press("enter")
        await settle(pilot)
        transcript = app.query_one(Transcript)
        assert transcript.at_end and transcript._reply is None
    assert True not in shown, shown
