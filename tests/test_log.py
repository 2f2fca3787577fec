"""The session log: append and replay, fsync, torn tail, corrupt lines, tail scan, listeners."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from engine import events as ev
from engine.log import (
    LogWriteError,
    SessionLog,
    TailState,
    from_dict,
    parse_line,
    read_events,
)

FIXED = datetime(2025, 3, 4, 5, 6, 7, 891234, tzinfo=UTC)


def _line(seq: int, kind: type[ev.Event] = ev.UserMessage, **fields: Any) -> bytes:
    event = {"seq": seq, "ts": "2025-01-01T00:00:00.000Z", "kind": ev.kind_of(kind), **fields}
    return json.dumps(event).encode() + b"\n"


def _good_lines(n: int) -> list[bytes]:
    return [_line(i + 1, text=f"message {i + 1}") for i in range(n)]


def _ev(seq: int, kind: type[ev.Event], **fields: Any) -> ev.LogEvent:
    line = {"seq": seq, "ts": "2025-01-01T00:00:00.000Z", "kind": ev.kind_of(kind), **fields}
    return from_dict(line, path=Path("session.jsonl"), lineno=seq)


# -- append and replay ------------------------------------------------------------------


def test_append_then_replay_round_trips_seq_ts_kind_and_fields(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path, clock=lambda: FIXED)
    written = [
        log.append(ev.TurnStart(turn=1, items=[1])),
        log.append(ev.UserMessage(text="héllo, 世界")),
        log.append(ev.AssistantMessage(content="hi", usage={"total_tokens": 3})),
        log.append(ev.TurnEnd(turn=1, status="ok")),
    ]
    log.close()

    assert [e.seq for e in written] == [1, 2, 3, 4]
    assert all(e.ts == "2025-03-04T05:06:07.891Z" for e in written)

    raw = path.read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 4
    assert [json.loads(line) for line in raw.splitlines()] == [ev.to_dict(e) for e in written]

    again = SessionLog.open(path)
    assert again.events == written
    assert again.torn_report is None
    assert again.next_seq == 5
    assert again.append(ev.UnknownEvent(0, "", "x/y")).seq == 5
    again.close()
    assert [e.seq for e in read_events(path).events] == [1, 2, 3, 4, 5]


def test_a_line_begins_as_its_kind_says(tmp_path: Path) -> None:
    # Thread listings scan lines by their start (engine.threads.thread.has_history).
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path, clock=lambda: FIXED)
    written = [
        log.append(ev.InboxQueued(text="hi", waking=True)),
        log.append(ev.UserMessage(text="hi", item_id=1)),
        log.append(ev.PromptDraft(text="unsent")),
    ]
    log.close()
    lines = path.read_bytes().splitlines()
    starts = [ev.line_start(type(event)) for event in written]
    assert all(line.startswith(start) for line, start in zip(lines, starts, strict=True))
    assert ev.line_start(ev.UserMessage) == b'{"kind":"user/message"'


def test_open_creates_missing_parent_directories_and_an_empty_log(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "session.jsonl"
    log = SessionLog.open(path)
    assert log.events == [] and log.next_seq == 1
    log.append(ev.UserMessage(text="first"))
    log.close()
    assert [e.text for e in read_events(path).events] == ["first"]


def test_each_append_reaches_the_os_before_returning(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    event = log.append(ev.UserMessage(text="visible to other readers"))
    # Another handle sees the line at once, without flush() or close().
    with path.open("rb") as other:
        assert json.loads(other.read().splitlines()[-1]) == ev.to_dict(event)
    log.close()


def test_flush_fsyncs_the_log_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    log.append(ev.UserMessage(text="durable"))

    synced: list[tuple[int, int]] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        st = os.fstat(fd)
        synced.append((st.st_dev, st.st_ino))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    log.flush()
    on_disk = path.stat()
    assert (on_disk.st_dev, on_disk.st_ino) in synced, "flush() must fsync the log file itself"
    with path.open("rb") as other:
        assert json.loads(other.read())["text"] == "durable"
    log.close()


def test_append_after_close_raises_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    log.append(ev.UserMessage(text="a"))
    log.close()
    with pytest.raises(LogWriteError, match="closed"):
        log.append(ev.UserMessage(text="b"))
    assert [e.text for e in read_events(path).events] == ["a"]


# -- torn tail ----------------------------------------------------------------------------


def test_torn_last_line_is_ignored_reported_once_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    torn = b'{"seq":3,"ts":"2025-01-01T00:00:00.000Z","kind":"user/mes'
    path.write_bytes(b"".join(_good_lines(2)) + torn)

    # Reading alone reports and does not modify the file.
    loaded = read_events(path)
    assert [e.seq for e in loaded.events] == [1, 2]
    assert loaded.torn is not None and f"{path}:3" in loaded.torn
    assert path.read_bytes().endswith(torn)

    log = SessionLog.open(path)
    assert [e.seq for e in log.events] == [1, 2]
    report = log.torn_report
    assert report is not None
    assert f"{path}:3" in report, report

    kept = sorted(p for p in tmp_path.iterdir() if p.name != path.name)
    assert len(kept) == 1 and kept[0].name.startswith("session.jsonl.torn")
    assert kept[0].read_bytes() == torn, "the torn bytes must be kept beside the log"
    assert kept[0].name in report

    event = log.append(ev.UserMessage(text="after the crash"))
    log.close()
    assert event.seq == 3
    reloaded = read_events(path)
    assert reloaded.torn is None
    assert [e.seq for e in reloaded.events] == [1, 2, 3]
    assert reloaded.events[-1].text == "after the crash"

    # Reported once: the next open finds a clean file.
    again = SessionLog.open(path)
    assert again.torn_report is None
    assert len(again.events) == 3
    again.close()


def test_torn_only_line_of_a_new_log(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(b'{"seq":1,"ts"')
    log = SessionLog.open(path)
    assert log.events == [] and log.torn_report is not None
    assert log.append(ev.UserMessage(text="x")).seq == 1
    log.close()
    assert path.read_bytes().count(b"\n") == 1
    assert read_events(path).events[0].text == "x"


def test_a_second_torn_tail_at_the_same_seq_does_not_overwrite_the_first(tmp_path: Path) -> None:
    # An empty thread gets no end-seed on resume, so a second crash can tear seq 1 again.
    path = tmp_path / "session.jsonl"
    first = b'{"seq":1,"ts":"x","kind":"user/message","text":"FIRST'
    second = b'{"seq":1,"ts":"x","kind":"user/message","text":"SECOND'
    path.write_bytes(first)
    SessionLog.open(path).close()
    path.write_bytes(second)
    SessionLog.open(path).close()
    kept = {p.read_bytes() for p in tmp_path.iterdir() if p.name != path.name}
    assert kept == {first, second}, (
        "BUG engine/log/session_log.py SessionLog.open: the .torn-N file is overwritten, "
        f"losing the earlier torn bytes; kept: {kept!r}"
    )


# -- corruption -----------------------------------------------------------------------

BAD_LINES = {
    "invalid JSON": (b'{"seq": 2, "kind": ', "JSON"),
    "not an object (list)": (b"[1, 2, 3]", "object"),
    "not an object (string)": (b'"just text"', "object"),
    "missing kind": (b'{"seq": 0, "ts": "x"}', "kind"),
    "kind not a string": (b'{"seq": 0, "ts": "x", "kind": 7}', "kind"),
    "wrong seq (gap)": (b'{"seq": 99, "ts": "x", "kind": "user/message"}', "seq"),
    "wrong seq (missing)": (b'{"ts": "x", "kind": "user/message"}', "seq"),
    "blank line": (b"", "empty"),
    "whitespace line": (b"   \t", "empty"),
}


def _others(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name != "session.jsonl")


@pytest.mark.parametrize("bad_index", [1, 3])
@pytest.mark.parametrize("case", list(BAD_LINES), ids=list(BAD_LINES))
def test_a_bad_line_in_the_middle_ends_the_prefix_and_the_writer_sets_the_rest_aside(
    tmp_path: Path, case: str, bad_index: int
) -> None:
    """Issue 30 item 2: one bad line no longer makes the thread unreadable. Readers load
    the lines before it and change nothing; the writer moves it and every byte after it
    to a quarantine file, says so once, and goes on with the next seq."""
    path = tmp_path / "session.jsonl"
    bad, problem_word = BAD_LINES[case]
    lines = _good_lines(5)
    # Keep the seq of the bad line consistent with its position where the case is not about seq.
    if b'"seq": 0' in bad:
        bad = bad.replace(b'"seq": 0', b'"seq": %d' % (bad_index + 1))
    lines[bad_index] = bad + b"\n"
    original = b"".join(lines)
    path.write_bytes(original)
    good = len(b"".join(lines[:bad_index]))

    loaded = read_events(path)
    assert [e.seq for e in loaded.events] == list(range(1, bad_index + 1))
    err = loaded.damage
    assert err is not None and err.line == bad_index + 1
    assert str(err) == f"{path}:{bad_index + 1}: {err.problem}"
    assert problem_word.lower() in err.problem.lower(), err.problem
    assert loaded.good_bytes == good and loaded.torn is None

    # A read-only open (a view) loads the prefix too, reports, and touches nothing.
    view = SessionLog.open(path, read_only="someone else writes it")
    assert len(view.events) == bad_index
    assert view.damage_report is not None and f"{path}:{bad_index + 1}: " in view.damage_report
    view.close()
    assert path.read_bytes() == original, "a reader may not change the log"
    assert _others(tmp_path) == []

    log = SessionLog.open(path, clock=lambda: FIXED)
    assert [e.seq for e in log.events] == list(range(1, bad_index + 1))
    report = log.damage_report
    assert report is not None and report.startswith(f"{path}:{bad_index + 1}: {err.problem}")
    assert "\n" not in report
    (kept,) = _others(tmp_path)
    assert kept.name == "session.jsonl.quarantine-20250304T050607Z" and kept.name in report
    assert kept.read_bytes() == original[good:], "every byte set aside is kept"
    assert path.read_bytes() == original[:good]
    assert log.append(ev.UserMessage(text="after the repair")).seq == bad_index + 1
    log.close()

    again = SessionLog.open(path)
    assert again.damage_report is None and again.torn_report is None, "said once"
    assert [e.seq for e in again.events] == list(range(1, bad_index + 2))
    again.close()
    assert _others(tmp_path) == [kept]


def test_a_second_quarantine_never_overwrites_the_first(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    first = _line(1) + b"FIRST\n"
    second = _line(1) + b"SECOND\n" + _line(3)
    for body in (first, second):
        path.write_bytes(body)
        SessionLog.open(path, clock=lambda: FIXED).close()  # the same second both times
    kept = {p.read_bytes() for p in _others(tmp_path)}
    assert kept == {b"FIRST\n", b"SECOND\n" + _line(3)}


def test_duplicate_seq_ends_the_prefix(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(_line(1) + _line(2) + _line(2) + _line(3))
    loaded = read_events(path)
    assert [e.seq for e in loaded.events] == [1, 2]
    assert loaded.damage is not None and loaded.damage.line == 3
    assert "expected seq 3, found 2" in str(loaded.damage)


def test_a_bad_line_before_a_torn_tail_sets_both_aside_in_one_file(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    rest = b"garbage\n" + b'{"seq":3,"ki'
    path.write_bytes(_line(1) + rest)
    log = SessionLog.open(path)
    assert log.damage_report is not None and f"{path}:2: " in log.damage_report
    assert log.torn_report is None
    log.close()
    (kept,) = _others(tmp_path)
    assert kept.name.startswith("session.jsonl.quarantine-") and kept.read_bytes() == rest
    assert path.read_bytes() == _line(1)


def test_invalid_utf8_line_is_reported_as_corruption(tmp_path: Path) -> None:
    # A line that is not UTF-8 must be named with file:line, not crash
    # inside the error handling (see the bug report: UnicodeDecodeError has no .msg).
    path = tmp_path / "session.jsonl"
    path.write_bytes(_line(1) + b'{"seq":2,"ts":"x","kind":"user/message","text":"\xff"}\n')
    loaded = read_events(path)
    assert [e.seq for e in loaded.events] == [1]
    assert loaded.damage is not None and loaded.damage.line == 2
    assert str(loaded.damage).startswith(f"{path}:2: ")


@pytest.mark.parametrize("seq", ["true", "1.0"], ids=["bool", "float"])
def test_seq_must_be_an_integer(tmp_path: Path, seq: str) -> None:
    # `true == 1` and `1.0 == 1` in Python, so an equality check alone accepts them.
    path = tmp_path / "session.jsonl"
    path.write_bytes(b'{"seq":%s,"ts":"x","kind":"user/message"}\n' % seq.encode())
    loaded = read_events(path)
    assert loaded.events == []
    assert loaded.damage is not None and loaded.damage.line == 1
    assert ":1: " in str(loaded.damage)


# -- tail scan ------------------------------------------------------------------------


def _tail(*events: ev.LogEvent) -> TailState:
    state = TailState()
    for event in events:
        state.apply(event)
    return state


def test_tail_finds_the_open_turn_and_closes_it_on_its_end() -> None:
    start1 = _ev(1, ev.TurnStart, turn=1)
    start2 = _ev(4, ev.TurnStart, turn=2)
    state = _tail(start1, _ev(2, ev.UserMessage, text="q"), _ev(3, ev.TurnEnd, turn=1), start2)
    assert state.open_turn == start2
    assert state.last_turn == 2
    state.apply(_ev(5, ev.TurnEnd, turn=1))  # the end of another turn closes nothing
    assert state.open_turn == start2
    state.apply(_ev(6, ev.TurnEnd, turn=2))
    assert state.open_turn is None
    assert state.last_turn == 2


def test_tail_finds_the_newest_end_seed_and_it_clears_an_open_turn() -> None:
    seed1 = _ev(2, ev.EndSeed)
    seed2 = _ev(4, ev.EndSeed)
    state = _tail(_ev(1, ev.TurnStart, turn=1), seed1, _ev(3, ev.TurnStart, turn=2), seed2)
    assert state.end_seed == seed2
    assert state.open_turn is None, "a turn open before the seam belongs to a crashed lifecycle"
    assert state.last_turn == 2


def test_unmatched_compact_start_after_the_newest_end_seed_is_live() -> None:
    start = _ev(3, ev.CompactStart, turn=None, first=1, last=2)
    state = _tail(_ev(1, ev.UserMessage, text="a"), _ev(2, ev.EndSeed), start)
    assert state.open_compact == start
    assert state.stale_compacts == []


def test_unmatched_compact_start_before_a_later_end_seed_is_stale() -> None:
    start = _ev(2, ev.CompactStart, turn=None)
    state = _tail(_ev(1, ev.EndSeed), start, _ev(3, ev.EndSeed))
    assert state.open_compact is None
    assert state.stale_compacts == [start]


def test_compact_end_naming_the_start_closes_it_and_another_does_not() -> None:
    start = _ev(1, ev.CompactStart, turn=None)
    state = _tail(start, _ev(2, ev.CompactEnd, start=99, error="changed"))
    assert state.open_compact == start, "an end for another start must not close this one"
    state.apply(_ev(3, ev.CompactEnd, start=1))
    assert state.open_compact is None
    state.apply(_ev(4, ev.EndSeed))
    assert state.stale_compacts == [], "a closed compaction is never stale"


def test_replay_from_disk_rebuilds_the_tail(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    log.append(ev.TurnStart(turn=1))
    stale = log.append(ev.CompactStart(turn=1))
    log.append(ev.EndSeed())
    live = log.append(ev.CompactStart(turn=None))
    log.close()
    again = SessionLog.open(path)
    assert again.tail.open_turn is None
    assert again.tail.stale_compacts == [stale]
    assert again.tail.open_compact == live
    assert again.tail.end_seed is not None and again.tail.end_seed.seq == 3
    assert again.tail.last_turn == 1
    again.close()


# -- listeners ------------------------------------------------------------------------


def test_listener_runs_after_the_line_is_written(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    seen: list[tuple[ev.LogEvent, ev.LogEvent, bool, bool]] = []

    def listener(event: ev.LogEvent) -> None:
        with path.open("rb") as other:
            on_disk = parse_line(path, event.seq, other.read().splitlines()[-1])
        in_memory = log.events[-1] is event
        tail_applied = log.tail.open_turn is event
        seen.append((event, on_disk, in_memory, tail_applied))

    log.listeners.append(listener)
    event = log.append(ev.TurnStart(turn=1))
    log.close()
    assert seen == [(event, event, True, True)]


def test_listener_may_append_reentrantly(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    seen: list[tuple[int, type[ev.LogEvent]]] = []

    def echo_back(event: ev.LogEvent) -> None:
        seen.append((event.seq, type(event)))
        if isinstance(event, ev.UserMessage):
            log.append(ev.CommandDone(run=event.seq))

    log.listeners.append(echo_back)
    log.append(ev.UserMessage(text="one"))
    log.append(ev.UserMessage(text="two"))
    log.close()

    assert seen == [
        (1, ev.UserMessage),
        (2, ev.CommandDone),
        (3, ev.UserMessage),
        (4, ev.CommandDone),
    ]
    replayed = read_events(path).events
    assert [(e.seq, type(e)) for e in replayed] == seen
    assert [getattr(e, "run", None) for e in replayed] == [None, 1, None, 3]


def test_a_lone_surrogate_from_a_model_does_not_fail_the_append(tmp_path: Path) -> None:
    """JSON escapes allow "\\ud800"; UTF-8 does not. The line is written with U+FFFD."""
    log = SessionLog.open(tmp_path / "session.jsonl")
    log.append(ev.AssistantMessage(content="half a pair: \ud800!", tool_calls=[]))
    log.append(ev.UserMessage(text="next"))
    log.close()
    events = read_events(tmp_path / "session.jsonl").events
    assert events[0].content == "half a pair: \ufffd!" and events[1].seq == 2


def test_a_write_that_fails_part_way_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    log.append(ev.UserMessage(text="kept"))
    before = path.read_bytes()
    calls = {"n": 0}

    def half_then_full(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return os.write(fd, data[:7])
        raise OSError(28, "No space left on device")

    log._raw_write = half_then_full  # type: ignore[method-assign]
    with pytest.raises(LogWriteError, match="No space left on device"):
        log.append(ev.UserMessage(text="lost to a full disk"))
    assert path.read_bytes() == before and log.next_seq == 2
    del log._raw_write  # space is back
    log.append(ev.UserMessage(text="after"))
    log.close()
    assert [e.text for e in read_events(path).events] == ["kept", "after"]


def test_usage_lines_keep_every_key_and_read_back_as_a_compact_struct(tmp_path: Path) -> None:
    # What a provider sent is written as it came (key order, nesting, keys Trove
    # does not name); in memory it is a Usage Struct, not a dict per reply.
    sent = {
        "prompt_tokens": 1200,
        "completion_tokens": 34,
        "total_tokens": 1234,
        "prompt_tokens_details": {"cached_tokens": 1024},
        "prompt_cache_hit_tokens": 1024,
        "vendor_extra": 7,
    }
    old_line = (
        b'{"seq":1,"ts":"2025-01-01T00:00:00.000Z","kind":"assistant/message","content":"hi",'
        b'"usage":{"total_tokens":3,"prompt_tokens":null,"odd":[1]}}\n'
    )
    path = tmp_path / "session.jsonl"
    path.write_bytes(old_line)
    log = SessionLog.open(path, clock=lambda: FIXED)
    old = log.events[0]
    assert isinstance(old, ev.AssistantMessage) and isinstance(old.usage, ev.Usage)
    assert old.usage.total_tokens == 3 and old.usage.prompt_tokens is None
    written = log.append(ev.AssistantMessage(content="hello", usage=ev.usage_as_sent(sent)))
    log.close()

    assert isinstance(written, ev.AssistantMessage) and isinstance(written.usage, ev.Usage)
    assert written.usage.prompt_tokens == 1200 and written.usage.total_tokens == 1234
    assert written.usage.prompt_tokens_details == {"cached_tokens": 1024}
    lines = path.read_bytes().splitlines()
    assert lines[0] + b"\n" == old_line  # the old line untouched
    assert json.loads(lines[1])["usage"] == sent
    assert lines[1].index(b'"usage":{"prompt_tokens":1200,"completion_tokens":34,') > 0

    again = SessionLog.open(path)
    assert again.events == [old, written]
    assert ev.to_dict(again.events[1])["usage"] == {
        k: v for k, v in sent.items() if k != "vendor_extra"
    }
    again.close()


def test_compaction_spans_read_back_typed_and_lines_stay_as_they_were(tmp_path: Path) -> None:
    # compact/start's `range` and compact/summary's `span` are SeqSpan Structs in memory;
    # older lines (no `count`) load, and a line written now reads as it always did.
    # An `archive` of any shape loads too: continuity.status judges it.
    stamp = b'"ts":"2025-01-01T00:00:00.000Z"'
    old_lines = (
        b'{"kind":"compact/start","seq":1,' + stamp + b',"turn":null,'
        b'"range":{"first":4,"last":9},"seqs":[4,9],"tokens":9}\n'
        b'{"kind":"compact/summary","seq":2,' + stamp + b',"start":1,"summary":"s",'
        b'"span":{"first":4,"last":9,"count":2}}\n'
        b'{"kind":"compact/end","seq":3,' + stamp + b',"start":1,"archive":"not a reference"}\n'
    )
    path = tmp_path / "session.jsonl"
    path.write_bytes(old_lines)
    log = SessionLog.open(path, clock=lambda: FIXED)
    start, summary, end = log.events
    assert isinstance(start, ev.CompactStart) and start.range == ev.SeqSpan(4, 9)
    assert isinstance(summary, ev.CompactSummary) and summary.span == ev.SeqSpan(4, 9, 2)
    assert isinstance(end, ev.CompactEnd) and end.archive == "not a reference"
    log.append(ev.CompactStart(turn=None, range=ev.SeqSpan(11, 14, 3), tokens=5))
    log.append(ev.CompactStart(turn=None))
    log.close()
    lines = path.read_bytes().splitlines(keepends=True)
    assert b"".join(lines[:3]) == old_lines
    assert b',"turn":null,"range":{"first":11,"last":14,"count":3},"tokens":5}' in lines[3]
    assert lines[4].endswith(b',"turn":null}\n')
    assert ev.to_dict(start)["range"] == {"first": 4, "last": 9}
