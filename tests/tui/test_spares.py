"""Scrolling a long thread shows its messages in the widgets the window let go of.

The window over the log prunes at one end as it grows at the other; the user
messages and past replies it lets go of are kept hidden and rebound to the
messages of the next slices (tui.widgets.spares). Whatever widget shows a
message must show it as a new one would: its text, its label, its classes.
"""

from __future__ import annotations

from engine import events as ev
from tests.tui.conftest import app_on_thread, settle
from tui.widgets import transcript as transcript_module
from tui.widgets.chat_message import PastReply, UserMessage
from tui.widgets.prompt_input import PromptInput
from tui.widgets.tool_block import ToolBlock
from tui.widgets.transcript import Transcript

TURNS = 150


def _events() -> list[ev.LogEvent]:
    """Questions (every seventh a steer) and replies (every fifth cancelled, every third
    with a tool call, whose result every sixth lacks)."""
    events: list[ev.LogEvent] = []
    for n in range(TURNS):
        steer = "next-step" if n % 7 == 3 else None
        events.append(ev.UserMessage(text=f"question {n}", placement=steer))
        calls = (ev.ToolCall(id=f"call-{n}", name="read", arguments=f'{{"n": {n}}}'),)
        reply = ev.AssistantMessage(
            content=f"reply **{n}**", cancelled=n % 5 == 2, tool_calls=calls if n % 3 == 0 else None
        )
        events.append(reply)
        if n % 3 == 0 and n % 6 != 0:
            events.append(ev.ToolResult(call_id=f"call-{n}", content=f"result {n}"))
    return events


def _shows_its_event(transcript: Transcript, by_seq: dict[int, ev.LogEvent], expanded: str) -> None:
    """Each widget of the window shows its own event, in the log's order; spares are
    hidden and not part of it. Only the call `expanded` may show expanded."""
    seqs: list[int] = []
    for widget in transcript._content():
        if type(widget) is ToolBlock:
            n = int(widget.call_id.removeprefix("call-"))
            assert widget.tool_name == "read" and widget.arguments == f'{{"n": {n}}}'
            assert widget.result == (None if n % 6 == 0 else f"result {n}")
            assert widget.collapsed or widget.call_id == expanded
            assert transcript._tools[widget.call_id] is widget
            continue
        if type(widget) is UserMessage:
            event = by_seq[widget.seq]
            assert isinstance(event, ev.UserMessage) and widget.text == event.text
            steer = event.placement == "next-step"
            assert widget.has_class("-steer") == steer, widget.seq
            assert ("steer " in str(widget.visual)) == steer, widget.seq
        elif type(widget) is PastReply:
            event = by_seq[widget.seq]
            assert isinstance(event, ev.AssistantMessage) and widget.text == event.content
            assert widget.has_class("-cancelled") == event.cancelled, widget.seq
        else:
            continue
        assert widget.display
        seqs.append(widget.seq)
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    spares = [w for w in transcript.children if w in transcript._spares]
    assert all(not w.display for w in spares)


async def test_paging_through_a_long_thread_rebinds_the_widgets_it_let_go_of(
    app_factory, tmp_path, monkeypatch
):
    monkeypatch.setattr(transcript_module, "HIGH_WATER", 40)
    monkeypatch.setattr(transcript_module, "CHUNK", 30)
    app = app_on_thread(app_factory, tmp_path / "home", "t-spares", _events())
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        transcript = app.query_one(Transcript)
        log = transcript.events[0 : len(transcript.events)]
        by_seq = {event.seq: event for event in log}
        seen: list[object] = []  # every widget that showed a message (held: ids stay unique)
        shown: set[int] = set()
        newest = transcript.query(ToolBlock).last()
        newest.action_toggle_block()  # expanded: the widget showing another call is not
        await settle(pilot)
        expanded = newest.call_id
        assert not newest.collapsed

        def note() -> None:
            for widget in transcript._content():
                if type(widget) in (UserMessage, PastReply, ToolBlock):
                    shown.add(getattr(widget, "seq", None) or widget.call_id)
                    if not any(w is widget for w in seen):
                        seen.append(widget)

        for way in ("pageup", "pagedown"):
            for _ in range(400):
                texts = [getattr(w, "text", "") for w in transcript._content()]
                ended = texts[0] == "question 0" if way == "pageup" else transcript.at_end
                if ended and (transcript.scroll_y == 0 or way == "pagedown"):
                    break
                await pilot.press(way)
                _shows_its_event(transcript, by_seq, expanded)
                note()
            await settle(pilot)
            _shows_its_event(transcript, by_seq, expanded)
        assert transcript.at_end and app.query_one(PromptInput).has_focus
        assert len(shown) == 2 * TURNS + TURNS // 3  # every message and call was shown
        # Far fewer widgets than messages: those let go of showed the next slices' messages.
        most = 40 + transcript_module.TRIM_SLACK + transcript_module.SLICE
        assert len(seen) <= most + transcript_module.SPARES, len(seen)
