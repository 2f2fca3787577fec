"""Corrupt log input: valid JSON of the wrong shape is a one-line `file:line` error.

Every reader of the log (resume, `history search`, `notes`, `threads`) sees
either a log whose every event has the shape its kind promises, or one
`LogCorruptError` naming the file and line; never a TypeError, KeyError or
RecursionError from deep inside a reader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import log as k
from engine.log import LogCorruptError, SessionLog, read_events
from engine.session import list_threads
from tests.cli_support import Env, trove

TS = "2025-01-01T00:00:00.000Z"
SOURCE = "r" + "0" * 32


def _line(seq: int, kind: str, **fields: Any) -> bytes:
    return json.dumps({"seq": seq, "ts": TS, "kind": kind, **fields}).encode() + b"\n"


def _good_prefix() -> bytes:
    return _line(1, k.INBOX_QUEUED, text="hello", waking=True, placement="follow-up") + _line(
        2, k.TURN_START, turn=1, items=[1]
    )


# kind, fields: each is valid JSON that some reader used to crash on or misread.
WRONG_SHAPES: dict[str, tuple[str, dict[str, Any]]] = {
    "user text int": (k.USER_MESSAGE, {"text": 12345}),
    "user text null": (k.USER_MESSAGE, {"text": None}),
    "user checkpoint str": (k.USER_MESSAGE, {"text": "x", "checkpoint": "x"}),
    "user checkpoint summary list": (k.USER_MESSAGE, {"text": "x", "checkpoint": {"summary": []}}),
    "user item_id list": (k.USER_MESSAGE, {"text": "x", "item_id": [1]}),
    "assistant content int": (k.ASSISTANT_MESSAGE, {"content": 5}),
    "tool_calls str": (k.ASSISTANT_MESSAGE, {"content": "", "tool_calls": "x"}),
    "tool_calls of ints": (k.ASSISTANT_MESSAGE, {"content": "", "tool_calls": [1]}),
    "tool call id int": (
        k.ASSISTANT_MESSAGE,
        {"content": "", "tool_calls": [{"id": 1, "name": "a", "arguments": "{}"}]},
    ),
    "tool call without name": (
        k.ASSISTANT_MESSAGE,
        {"content": "", "tool_calls": [{"id": "c1", "arguments": "{}"}]},
    ),
    "tool call arguments dict": (
        k.ASSISTANT_MESSAGE,
        {"content": "", "tool_calls": [{"id": "c1", "name": "a", "arguments": {}}]},
    ),
    "tool result content int": (k.TOOL_RESULT, {"call_id": "c1", "content": 5}),
    "tool result call_id list": (k.TOOL_RESULT, {"call_id": [], "content": "x"}),
    "summary replaced str": (k.COMPACT_SUMMARY, {"start": 1, "summary": "s", "replaced": "x"}),
    "summary replaced strs": (k.COMPACT_SUMMARY, {"start": 1, "summary": "s", "replaced": ["a"]}),
    "turn start without turn": (k.TURN_START, {"items": []}),
    "turn start turn str": (k.TURN_START, {"turn": "1"}),
    "compact end start str": (k.COMPACT_END, {"start": "x"}),
    "inbox queued text int": (k.INBOX_QUEUED, {"text": 1, "waking": True}),
    "inbox edited item_id list": (k.INBOX_EDITED, {"item_id": [3], "text": "x"}),
    "inbox removed item_id dict": (k.INBOX_REMOVED, {"item_id": {}}),
    "note content int": ("note/set", {"key": "k", "content": 12345, "source_ids": []}),
    "note key int": ("note/set", {"key": 5, "content": "c", "source_ids": []}),
    "note source_ids str": ("note/set", {"key": "k", "content": "c", "source_ids": SOURCE}),
    "note delete key list": ("note/delete", {"key": ["k"]}),
    "fork from_seq str": (k.SESSION_FORK, {"from_thread": "t", "from_seq": "1"}),
}


@pytest.mark.parametrize("case", list(WRONG_SHAPES), ids=list(WRONG_SHAPES))
def test_a_payload_of_the_wrong_shape_is_one_line_with_file_and_line(
    tmp_path: Path, case: str
) -> None:
    kind, fields = WRONG_SHAPES[case]
    path = tmp_path / "session.jsonl"
    original = _good_prefix() + _line(3, kind, **fields) + _line(4, k.TURN_END, turn=1)
    path.write_bytes(original)
    with pytest.raises(LogCorruptError) as info:
        read_events(path)
    assert info.value.line == 3
    message = str(info.value)
    assert message.startswith(f"{path}:3: ") and "\n" not in message
    with pytest.raises(LogCorruptError):
        SessionLog.open(path)
    assert path.read_bytes() == original


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    "raw",
    [
        _nested(100_000),
        '{"seq": 2, "ts": "x", "kind": "user/message", "text": "a", "x": ' + _nested(100_000) + "}",
        '{"seq": 2, "ts": "x", "kind": "user/message", "text": "a", "n": ' + "9" * 5000 + "}",
    ],
    ids=["deep array line", "deep array field", "5000-digit int"],
)
def test_pathological_json_is_corruption_not_a_crash(tmp_path: Path, raw: str) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(_line(1, k.USER_MESSAGE, text="a") + raw.encode() + b"\n")
    with pytest.raises(LogCorruptError) as info:
        read_events(path)
    assert info.value.line == 2


def test_every_shape_the_engine_writes_is_accepted(tmp_path: Path) -> None:
    """Validation must never reject a log the engine itself wrote."""
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    log.append(k.INBOX_QUEUED, text="q", waking=True, placement="follow-up")
    log.append(k.INBOX_EDITED, item_id=1, text="q2")
    log.append(k.TURN_START, turn=1, items=[1])
    log.append(k.USER_MESSAGE, text="q2", item_id=1)
    log.append(k.USER_MESSAGE, text="steer", item_id=1, placement="next-step")
    log.append(k.USER_MESSAGE, text="ctx", source="inject")
    call = {"id": "c1", "name": "history_search", "arguments": "{}"}
    log.append(k.ASSISTANT_MESSAGE, content=None, tool_calls=[call], usage=None, model="m")
    log.append(k.TOOL_RESULT, call_id="c1", name="history_search", content="r")
    log.append(k.ASSISTANT_MESSAGE, content="partial", tool_calls=[], cancelled=True)
    log.append(k.TURN_END, turn=1, status="error", error="boom")
    log.append(k.COMPACT_START, turn=None, range={"first": 4, "last": 9}, seqs=[4, 9], tokens=9)
    log.append(k.COMPACT_SUMMARY, start=12, summary="s", raw="s", usage={}, replaced=[4, 9])
    checkpoint = {"summary": 13, "start": 12, "first": 4, "last": 9, "count": 2}
    log.append(k.USER_MESSAGE, text="[checkpoint]", checkpoint=checkpoint)
    log.append(k.COMPACT_END, start=12, turn=None, archive={"batch": 1})
    log.append(k.COMMAND_RUN, name="compact", args="")
    log.append(k.COMMAND_DONE, name="compact", run=16, error="busy")
    log.append("note/set", key="k", content="c", source_ids=[SOURCE])
    log.append("note/delete", key="k")
    log.append(k.INBOX_REMOVED, item_id=1)
    log.append(k.END_SEED, previous=19)
    log.append(k.SESSION_FORK, from_thread="t", from_seq=3)
    log.append(k.USER_MESSAGE, text="forked", checkpoint={"forked_from": 3})
    log.append("future/kind", anything=[1, {"a": None}])
    log.close()
    assert len(read_events(path).events) == 23


# -- the commands a user runs ------------------------------------------------------------------


def _thread(home: Path, thread_id: str, body: bytes) -> Path:
    directory = home / "users" / "local" / "threads" / thread_id
    directory.mkdir(parents=True)
    path = directory / "session.jsonl"
    path.write_bytes(body)
    return path


def _one_line_error(result: Any, path: Path, line: int) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{path}:{line}:" in lines[0]


BAD_TEXT = _good_prefix() + _line(3, k.USER_MESSAGE, text=12345, item_id=1)


@pytest.mark.parametrize(
    "args",
    [["history", "search", "hello"], ["notes"], ["history", "read", SOURCE]],
    ids=["search", "notes", "read"],
)
def test_read_only_commands_report_a_wrong_shape_in_one_line(env: Env, args: list[str]) -> None:
    path = _thread(env.home, "t1", BAD_TEXT)
    _one_line_error(trove(*env.common, *args, "--thread", "t1"), path, 3)


def test_resume_reports_a_wrong_shape_in_one_line(env: Env) -> None:
    path = _thread(env.home, "t1", BAD_TEXT)
    _one_line_error(trove(*env.common, "--thread", "t1", "-p", "more"), path, 3)


def test_threads_lists_healthy_threads_and_marks_a_damaged_one(env: Env) -> None:
    _thread(env.home, "good", _line(1, k.INBOX_QUEUED, text="a healthy question", waking=True))
    bad = _line(1, k.USER_MESSAGE, text="fine") + b'{"seq":2,"kind":"user/message","text":"\xff"}\n'
    _thread(env.home, "broken", bad)
    _thread(env.home, "shape", BAD_TEXT)

    result = trove(*env.common, "threads")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines()}
    assert "a healthy question" in rows["good"]
    assert "damaged" not in rows["good"]
    assert "damaged" in rows["broken"] and "session.jsonl:2" in rows["broken"]
    assert "damaged" in rows["shape"] and "session.jsonl:3" in rows["shape"]


def test_list_threads_survives_invalid_utf8_in_the_title_lines(tmp_path: Path) -> None:
    _thread(tmp_path, "bad", b'{"seq":1,"ts":"x","kind":"user/message","text":"\xff\xfe"}\n')
    _thread(tmp_path, "good", _line(1, k.USER_MESSAGE, text="hi"))
    found = {info.id: info for info in list_threads(tmp_path, "local", verify=True)}
    assert found["good"].title == "hi" and found["good"].problem is None
    assert found["bad"].problem is not None and ":1:" in found["bad"].problem
