"""The TUI follows the engine through its port: a display bug never ends a turn or the app,
and a thread switch leaves nothing of the old thread on screen."""

from __future__ import annotations

from typing import Any

from devtools import scripted_server as s
from engine import events as ev
from engine.log import Event
from tests.support import of_kind
from tests.tui.conftest import say, settle
from tui.widgets.chat_message import PastReply, UserMessage
from tui.widgets.transcript import Transcript


async def test_a_widget_failing_on_an_event_does_not_stop_the_turn(
    app_factory: Any, server: Any, monkeypatch: Any
) -> None:
    server.script(s.text("first answer"), s.text("second answer"))
    real = Transcript.show_event
    failed: list[int] = []

    def show_event(self: Transcript, event: Event) -> None:
        if isinstance(event, ev.UserMessage) and not failed:
            failed.append(event.seq)
            raise RuntimeError("widget bug")
        real(self, event)

    monkeypatch.setattr(Transcript, "show_event", show_event)
    app = app_factory()
    notified: list[str] = []
    async with app.run_test(size=(100, 32)) as pilot:
        monkeypatch.setattr(app, "notify", lambda text, **_: notified.append(text))
        await settle(pilot)
        await say(pilot, "first question")
        assert failed  # the widget did fail on the prompt's event
        events = app.runtime.thread.log.events
        assert [e.status for e in of_kind(events, ev.TurnEnd)] == ["ok"]
        assert notified == ["Display error (RuntimeError); the session goes on."]
        await say(pilot, "second question")  # the app goes on too
        assert [e.status for e in of_kind(app.runtime.thread.log.events, ev.TurnEnd)] == [
            "ok",
            "ok",
        ]
        assert [m.text for m in app.query(UserMessage)] == ["second question"]


async def test_the_transcript_holds_its_own_events(app_factory: Any, server: Any) -> None:
    server.script(s.text("an answer"))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await say(pilot, "a question")
        transcript = app.query_one(Transcript)
        log_events = app.runtime.thread.log.events
        assert transcript.events == log_events and transcript.events is not log_events
        first = app.runtime.thread.id
        await app.chat.switch_thread(None)
        await settle(pilot)
        assert app.runtime.thread.id != first
        assert not app.query(UserMessage) and not app.query(PastReply)
        assert transcript.events == app.runtime.thread.log.events


def test_thinking_and_text_deltas_each_join_a_message_of_their_own() -> None:
    """Deltas queued behind a message of their kind join it; a change of kind starts a new
    one, so the screen hears thinking and text in the order the engine spoke."""
    from engine.port import ReasoningDelta, ReplyDelta
    from tui.bridge import Bridge

    posted: list[Any] = []

    class Target:
        def post_message(self, message: Any) -> bool:
            posted.append(message)
            return True

    class Runtime:
        def subscribe(self, listener: Any, on_error: Any) -> Any:
            self.listener = listener
            return lambda: None

    runtime = Runtime()
    Bridge(runtime, Target(), on_error=lambda *a: None)  # type: ignore[arg-type]
    for notification in (
        ReasoningDelta(1, "let "),
        ReasoningDelta(1, "me think"),
        ReplyDelta(1, "The "),
        ReplyDelta(1, "answer."),
        ReasoningDelta(1, "more"),
    ):
        runtime.listener(notification)
    assert [(type(m).__name__, m.take()) for m in posted] == [
        ("ReasoningStreamed", "let me think"),
        ("ReplyStreamed", "The answer."),
        ("ReasoningStreamed", "more"),
    ]
