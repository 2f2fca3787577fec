"""The event splitter cuts the same events however the bytes are split across reads."""

from __future__ import annotations

import pytest

from engine.model._sse import EventSplitter

STREAM = (
    b": keep-alive comment\r\n"
    b"event: message\r\n"
    b'data: {"a": 1}\r\n'
    b"\r\n"
    b"data: first line\n"
    b"data:second line\n"
    b"id: 7\n"
    b"\n"
    b"retry: 10\r\r"
    b"data: [DONE]\r\n\r\n"
)
EVENTS = [b'{"a": 1}', b"first line\nsecond line", b"[DONE]"]


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(STREAM)])
def test_events_are_the_same_for_any_read_size(size: int) -> None:
    splitter = EventSplitter()
    events: list[bytes] = []
    for i in range(0, len(STREAM), size):
        events.extend(splitter.feed(STREAM[i : i + size]))
    assert events == EVENTS


def test_an_unfinished_event_is_held_until_its_blank_line() -> None:
    splitter = EventSplitter()
    assert splitter.feed(b"data: x\n") == []
    assert splitter.feed(b"\n") == [b"x"]
