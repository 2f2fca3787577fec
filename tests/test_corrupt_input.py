"""Corrupt log input: valid JSON of the wrong shape is named in one `file:line` line.

Every reader of the log (resume, `history search`, `notes`, `threads`) sees
a log whose every event has the shape its kind promises: the events before
a bad line (the consistent prefix), with the bad line named once in one line
naming the file and line; never a TypeError, KeyError or RecursionError from
deep inside a reader. Readers change nothing; the writer sets the bad line
and what follows aside (tests/test_log.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.log import SessionLog, read_events
from engine.workspace.listing import list_threads
from tests.cli_support import Env, trove

TS = "2025-01-01T00:00:00.000Z"
SOURCE = "r" + "0" * 32


def _line(seq: int, kind: type[ev.Event], **fields: Any) -> bytes:
    line = {"seq": seq, "ts": TS, "kind": ev.kind_of(kind), **fields}
    return json.dumps(line).encode() + b"\n"


def _good_prefix() -> bytes:
    return _line(1, ev.InboxQueued, text="hello", waking=True, placement="follow-up") + _line(
        2, ev.TurnStart, turn=1, items=[1]
    )


# kind, fields: each is valid JSON that some reader used to crash on or misread.
WRONG_SHAPES: dict[str, tuple[type[ev.Event], dict[str, Any]]] = {
    "user text int": (ev.UserMessage, {"text": 12345}),
    "user text null": (ev.UserMessage, {"text": None}),
    "user checkpoint str": (ev.UserMessage, {"text": "x", "checkpoint": "x"}),
    "user checkpoint summary list": (ev.UserMessage, {"text": "x", "checkpoint": {"summary": []}}),
    "user item_id list": (ev.UserMessage, {"text": "x", "item_id": [1]}),
    "assistant content int": (ev.AssistantMessage, {"content": 5}),
    "tool_calls str": (ev.AssistantMessage, {"content": "", "tool_calls": "x"}),
    "tool_calls of ints": (ev.AssistantMessage, {"content": "", "tool_calls": [1]}),
    "tool call id int": (
        ev.AssistantMessage,
        {"content": "", "tool_calls": [{"id": 1, "name": "a", "arguments": "{}"}]},
    ),
    "tool call without name": (
        ev.AssistantMessage,
        {"content": "", "tool_calls": [{"id": "c1", "arguments": "{}"}]},
    ),
    "tool call arguments dict": (
        ev.AssistantMessage,
        {"content": "", "tool_calls": [{"id": "c1", "name": "a", "arguments": {}}]},
    ),
    "tool result content int": (ev.ToolResult, {"call_id": "c1", "content": 5}),
    "tool result call_id list": (ev.ToolResult, {"call_id": [], "content": "x"}),
    "summary replaced str": (ev.CompactSummary, {"start": 1, "summary": "s", "replaced": "x"}),
    "summary replaced strs": (ev.CompactSummary, {"start": 1, "summary": "s", "replaced": ["a"]}),
    "turn start without turn": (ev.TurnStart, {"items": []}),
    "turn start turn str": (ev.TurnStart, {"turn": "1"}),
    "compact end start str": (ev.CompactEnd, {"start": "x"}),
    "inbox queued text int": (ev.InboxQueued, {"text": 1, "waking": True}),
    "inbox edited item_id list": (ev.InboxEdited, {"item_id": [3], "text": "x"}),
    "inbox removed item_id dict": (ev.InboxRemoved, {"item_id": {}}),
    "note content int": (ev.NoteSet, {"key": "k", "content": 12345, "source_ids": []}),
    "note key int": (ev.NoteSet, {"key": 5, "content": "c", "source_ids": []}),
    "note source_ids str": (ev.NoteSet, {"key": "k", "content": "c", "source_ids": SOURCE}),
    "note delete key list": (ev.NoteDelete, {"key": ["k"]}),
    "fork from_seq str": (ev.SessionFork, {"from_thread": "t", "from_seq": "1"}),
}


@pytest.mark.parametrize("case", list(WRONG_SHAPES), ids=list(WRONG_SHAPES))
def test_a_payload_of_the_wrong_shape_is_one_line_with_file_and_line(
    tmp_path: Path, case: str
) -> None:
    kind, fields = WRONG_SHAPES[case]
    path = tmp_path / "session.jsonl"
    original = _good_prefix() + _line(3, kind, **fields) + _line(4, ev.TurnEnd, turn=1)
    path.write_bytes(original)
    loaded = read_events(path)
    assert [e.seq for e in loaded.events] == [1, 2]
    assert loaded.damage is not None and loaded.damage.line == 3
    message = str(loaded.damage)
    assert message.startswith(f"{path}:3: ") and "\n" not in message
    view = SessionLog.open(path, read_only="a view")
    assert len(view.events) == 2 and view.damage_report is not None
    view.close()
    assert path.read_bytes() == original


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    "raw",
    [
        _nested(100_000),
        '{"seq": 2, "ts": "x", "kind": "user/message", "text": "a", "x": ' + _nested(100_000) + "}",
        # In a field a reader uses: an unknown field is skipped, not parsed, by the typed
        # decoder (an integer past 64 bits is still refused wherever it is read).
        '{"seq": 2, "ts": "x", "kind": "user/message", "text": "a", "item_id": ' + "9" * 5000 + "}",
    ],
    ids=["deep array line", "deep array field", "5000-digit int"],
)
def test_pathological_json_is_corruption_not_a_crash(tmp_path: Path, raw: str) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(_line(1, ev.UserMessage, text="a") + raw.encode() + b"\n")
    loaded = read_events(path)
    assert len(loaded.events) == 1
    assert loaded.damage is not None and loaded.damage.line == 2


def test_every_shape_the_engine_writes_is_accepted(tmp_path: Path) -> None:
    """Validation must never reject a log the engine itself wrote."""
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    log.append(ev.InboxQueued(text="q", waking=True, placement="follow-up"))
    log.append(ev.InboxEdited(item_id=1, text="q2"))
    log.append(ev.TurnStart(turn=1, items=[1]))
    log.append(ev.UserMessage(text="q2", item_id=1))
    log.append(ev.UserMessage(text="steer", item_id=1, placement="next-step"))
    log.append(ev.UserMessage(text="ctx", source="inject"))
    call = ev.ToolCall(id="c1", name="history_search", arguments="{}")
    log.append(ev.AssistantMessage(content=None, tool_calls=[call], usage=None, model="m"))
    log.append(ev.ToolResult(call_id="c1", name="history_search", content="r"))
    log.append(ev.AssistantMessage(content="partial", tool_calls=[], cancelled=True))
    log.append(ev.TurnEnd(turn=1, status="error", error="boom"))
    log.append(ev.CompactStart(turn=None, range=ev.SeqSpan(4, 9), seqs=[4, 9], tokens=9))
    log.append(ev.CompactSummary(start=12, summary="s", raw="s", usage={}, replaced=[4, 9]))
    checkpoint = ev.Checkpoint(summary=13, start=12, first=4, last=9, count=2)
    log.append(ev.UserMessage(text="[checkpoint]", checkpoint=checkpoint))
    log.append(ev.CompactEnd(start=12, turn=None, archive={"batch": 1}))
    log.append(ev.CommandRun(name="compact", args=""))
    log.append(ev.CommandDone(name="compact", run=16, error="busy"))
    log.append(ev.NoteSet(key="k", content="c", source_ids=[SOURCE]))
    log.append(ev.NoteDelete(key="k"))
    log.append(ev.InboxRemoved(item_id=1))
    log.append(ev.EndSeed(previous=19))
    log.append(ev.SessionFork(from_thread="t", from_seq=3))
    log.append(ev.UserMessage(text="forked", checkpoint=ev.Checkpoint(forked_from=3)))
    log.append(ev.UnknownEvent(0, "", "future/kind", {"anything": [1, {"a": None}]}))
    log.close()
    assert len(read_events(path).events) == 23


# -- the commands a user runs ------------------------------------------------------------------


def _thread(home: Path, thread_id: str, body: bytes) -> Path:
    directory = home / "users" / "local" / "threads" / thread_id
    directory.mkdir(parents=True)
    path = directory / "session.jsonl"
    path.write_bytes(body)
    return path


def _one_line_report(result: Any, path: Path, line: int) -> str:
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{path}:{line}:" in lines[0]
    return lines[0]


BAD_TEXT = _good_prefix() + _line(3, ev.UserMessage, text=12345, item_id=1)


@pytest.mark.parametrize(
    "args",
    [["history", "search", "hello"], ["notes"], ["history", "read", SOURCE]],
    ids=["search", "notes", "read"],
)
def test_read_only_commands_report_a_wrong_shape_in_one_line(env: Env, args: list[str]) -> None:
    """They read the lines before it, say so in one line, and change no file."""
    path = _thread(env.home, "t1", BAD_TEXT)
    result = trove(*env.common, *args, "--thread", "t1")
    line = _one_line_report(result, path, 3)
    assert "read the 2 events before it" in line and "trove doctor t1" in line
    # `read` asks for a source the thread does not have: the tool's own not-found.
    assert result.returncode == (1 if args[-1] == SOURCE else 0), result.stderr
    assert path.read_bytes() == BAD_TEXT
    assert sorted(p.name for p in path.parent.iterdir()) == ["session.jsonl"]


def test_resume_reports_a_wrong_shape_in_one_line_and_goes_on(
    env: Env, server: ScriptedServer
) -> None:
    """The writer sets the bad line aside, says so once, and goes on from the prefix: the
    prompt it holds queued (its user/message was the bad line) is answered, then the new one."""
    server.script(s.text("answered"), s.text("and more"))
    path = _thread(env.home, "t1", BAD_TEXT)
    result = trove(*env.common, "--thread", "t1", "-p", "more")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["answered", "and", "more"]
    line = _one_line_report(result, path, 3)
    (kept,) = [p for p in path.parent.iterdir() if p.name.startswith("session.jsonl.quarantine-")]
    assert kept.name in line and kept.read_bytes() == BAD_TEXT[len(_good_prefix()) :]
    events = read_events(path).events
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.text for e in events if type(e) is ev.UserMessage] == ["hello", "more"]


def test_threads_lists_healthy_threads_and_marks_a_damaged_one(env: Env) -> None:
    _thread(env.home, "good", _line(1, ev.InboxQueued, text="a healthy question", waking=True))
    bad = _line(1, ev.UserMessage, text="fine") + b'{"seq":2,"kind":"user/message","text":"\xff"}\n'
    broken = _thread(env.home, "broken", bad)
    _thread(env.home, "shape", BAD_TEXT)

    result = trove(*env.common, "threads")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    rows = {line.split()[1]: line for line in result.stdout.splitlines()}
    assert "a healthy question" in rows["good"]
    assert "damaged" not in rows["good"]
    assert "damaged" in rows["broken"] and "session.jsonl:2" in rows["broken"]
    assert "1 message," in rows["broken"], "the lines before it are counted"
    assert "damaged" in rows["shape"] and "session.jsonl:3" in rows["shape"]
    assert broken.read_bytes() == bad, "a listing changes nothing"


def test_list_threads_survives_invalid_utf8_in_the_title_lines(tmp_path: Path) -> None:
    _thread(tmp_path, "bad", b'{"seq":1,"ts":"x","kind":"user/message","text":"\xff\xfe"}\n')
    _thread(tmp_path, "good", _line(1, ev.UserMessage, text="hi"))
    found = {info.id: info for info in list_threads(tmp_path, "local")}
    assert found["good"].title == "hi" and found["good"].problem is None
    assert found["bad"].problem is not None and ":1:" in found["bad"].problem
