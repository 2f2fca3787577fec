"""A message pruned from the transcript's window lets go of its drawn lines at once.

A pruned widget is in reference cycles with the app: only a full garbage collection
frees it, and every one of them walked the lines it kept (and those the screen derived
from them) meanwhile. Scrolling back prunes widgets all the time.
"""

from __future__ import annotations

from engine import events as ev
from tests.tui.conftest import app_on_thread, settle
from tui.widgets import transcript as transcript_module
from tui.widgets.chat_message import PastReply, UserMessage
from tui.widgets.transcript import Transcript

REPLY = "A reply with **bold** text and a list:\n\n- one\n- two\n\n" + "word " * 40


def _long_thread(app_factory, tmp_path, turns: int):
    """An app that opens thread t-pruned, of `turns` questions each with its reply."""
    events: list[ev.LogEvent] = []
    for n in range(turns):
        events.append(ev.UserMessage(text=f"question {n}"))
        events.append(ev.AssistantMessage(content=f"{REPLY} {n}"))
    return app_on_thread(app_factory, tmp_path / "home", "t-pruned", events)


async def test_a_reply_pruned_from_the_window_lets_go_of_its_drawn_lines(
    app_factory, tmp_path, monkeypatch
):
    """Pruned, a reply is removed or kept hidden to show another one (tui.widgets.spares):
    either way the lines drawn for it are gone at once."""
    monkeypatch.setattr(transcript_module, "HIGH_WATER", 30)
    monkeypatch.setattr(transcript_module, "CHUNK", 20)
    app = _long_thread(app_factory, tmp_path, 80)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)
        newest = [w for w in transcript._content() if isinstance(w, PastReply)]
        assert newest and all(w._drawn_lines is not None for w in newest[-3:])
        showed = {w: w.seq for w in newest}

        def let_go(reply: PastReply) -> bool:
            return not reply.is_attached or reply.seq != showed[reply]

        await _page_back(pilot, lambda: all(let_go(w) for w in newest))
        assert all(let_go(w) for w in newest)
        log = transcript.events[0 : len(transcript.events)]
        content = {e.seq: e.content for e in log if isinstance(e, ev.AssistantMessage)}
        for reply in newest:
            if not reply.is_attached or reply in transcript._spares:
                assert reply._drawn_lines is None and not reply._styles_cache._cache
            else:  # showing another reply: its text, and lines drawn for that if any
                assert reply in transcript._content() and reply.text == content[reply.seq]
                drawn = reply._drawn_lines
                assert drawn is None or drawn[0][2] is reply.visual


def _segments(strips) -> list[list[tuple[str, object]]]:
    """Each line, as its segments' text and style."""
    return [[(seg.text, seg.style) for seg in strip] for strip in strips]


def _drawn(widget) -> list[list[tuple[str, object]]]:
    """Each line drawn, as its segments' text and style."""
    return _segments(widget.render_lines(widget.size.region))


async def _page_back(pilot, done) -> None:
    """PageUp from the prompt until `done()` holds (at most 200 presses), then settle."""
    for _ in range(200):
        if done():
            break
        await pilot.press("pageup")
    await settle(pilot)


async def test_a_reply_scrolled_out_of_view_folds_its_lines_and_draws_the_same_back(
    app_factory, tmp_path, monkeypatch
):
    monkeypatch.setattr(transcript_module, "HIGH_WATER", 1000)  # nothing pruned here
    monkeypatch.setattr(transcript_module, "CHUNK", 20)
    app = _long_thread(app_factory, tmp_path, 80)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)
        newest = [w for w in transcript._content() if isinstance(w, PastReply)][-1]
        question = [w for w in transcript._content() if isinstance(w, UserMessage)][-1]
        assert newest._styles_cache._cache  # drawn: it is on screen
        assert question._render_cache.lines
        drawn, asked = _drawn(newest), _drawn(question)
        assert newest._drawn_lines is not None
        own = _segments(newest._drawn_lines[1])
        start = transcript._start
        await _page_back(pilot, lambda: transcript._start < start)
        assert transcript._start < start and newest.is_attached
        assert not newest._styles_cache._cache  # out of view: the screen's lines are gone
        assert not question._styles_cache._cache and not question._render_cache.lines
        # Its own lines, to draw from when back in view: folded into plain tuples, no Strips.
        assert newest._drawn_lines is None and newest._folded is not None
        kept = newest.to_keep()  # folded, it is still kept for the next open
        assert kept is not None and kept.strips() is not None
        assert _segments(kept.strips()) == own
        await pilot.press("ctrl+end")
        await settle(pilot)
        assert newest._styles_cache._cache
        assert _drawn(newest) == drawn
        assert _drawn(question) == asked


async def test_replies_scrolled_back_into_are_drawn_ahead_in_a_thread_as_they_would_be(
    app_factory, tmp_path, monkeypatch
):
    """The slice mounted next is drawn before it is mounted (off the loop): each reply
    is built with those lines, and they are the lines it would have rendered itself."""
    import threading

    from tui.widgets import chat_message

    monkeypatch.setattr(transcript_module, "HIGH_WATER", 30)
    monkeypatch.setattr(transcript_module, "CHUNK", 20)
    drawn_in: list[tuple[str, list[int]]] = []
    draw = chat_message.draw_ahead

    def noted(template, replies):
        drawn = draw(template, replies)
        drawn_in.append((threading.current_thread().name, sorted(drawn)))
        return drawn

    monkeypatch.setattr(transcript_module, "draw_ahead", noted)
    given: dict[int, object] = {}
    init = PastReply.__init__

    def built(self, text, *, seq=None, drawn=None):
        given[seq] = drawn
        init(self, text, seq=seq, drawn=drawn)

    monkeypatch.setattr(PastReply, "__init__", built)
    rebind = PastReply.rebind

    def rebound(self, text, *, seq=None, drawn=None):
        given[seq] = drawn
        rebind(self, text, seq=seq, drawn=drawn)

    monkeypatch.setattr(PastReply, "rebind", rebound)
    app = _long_thread(app_factory, tmp_path, 80)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)
        start = transcript._start
        await _page_back(pilot, lambda: transcript._start < start - 20)
        ahead = [seq for _, seqs in drawn_in for seq in seqs]
        assert ahead and all(name != threading.main_thread().name for name, _ in drawn_in)
        assert all(given[seq] is not None for seq in ahead)  # built with its lines
        mounted = [w for w in transcript._content() if type(w) is PastReply and w.seq in ahead]
        assert mounted
        for reply in mounted:
            width = reply.size.width
            lines = reply._reply_lines(width)
            fresh = PastReply(reply.text)
            await transcript.mount(fresh)
            await pilot.pause()
            own = fresh._reply_lines(width)
            assert _segments(lines) == _segments(own)
            await fresh.remove()


async def test_a_reply_longer_than_the_fold_bound_keeps_its_lines_out_of_view(
    app_factory, tmp_path, monkeypatch
):
    """Unfolding runs on the loop as a reply comes into view: a reply too long for that
    keeps its lines as they are."""
    from tui.widgets import chat_message

    monkeypatch.setattr(transcript_module, "HIGH_WATER", 1000)
    monkeypatch.setattr(transcript_module, "CHUNK", 20)
    monkeypatch.setattr(chat_message, "FOLD_LINES", 3)
    app = _long_thread(app_factory, tmp_path, 80)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)
        newest = [w for w in transcript._content() if isinstance(w, PastReply)][-1]
        assert newest._drawn_lines is not None and len(newest._drawn_lines[1]) > 3
        start = transcript._start
        await _page_back(pilot, lambda: transcript._start < start)
        assert transcript._start < start and newest.is_attached
        assert not newest._styles_cache._cache  # out of view
        assert newest._drawn_lines is not None and newest._folded is None
