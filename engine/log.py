"""The append-only session log: one JSON object per line, per thread.

The log is the single source of truth. The surface the model sees, the turn
counter, the inbox that survives a crash and the compaction lock are all
derived from it by replay, so a reader only ever needs this file.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from engine.event_shapes import SHAPES
from engine.private import open_private, private_dir

Event = dict[str, Any]
Listener = Callable[[Event], None]
Clock = Callable[[], datetime]

USER_MESSAGE = "user/message"
ASSISTANT_MESSAGE = "assistant/message"
TOOL_RESULT = "tool/result"
TURN_START = "turn/start"
TURN_END = "turn/end"
COMPACT_START = "compact/start"
COMPACT_SUMMARY = "compact/summary"
COMPACT_END = "compact/end"
COMMAND_RUN = "command/run"
COMMAND_DONE = "command/done"
END_SEED = "session/end-seed"
SESSION_FORK = "session/fork"
INBOX_QUEUED = "inbox/queued"
INBOX_REMOVED = "inbox/removed"
INBOX_EDITED = "inbox/edited"


class LogCorruptError(Exception):
    """A line other than a torn tail is unreadable: loading stops rather than lose data."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


@dataclass
class TailState:
    """What replay knows about open brackets, kept by one transition function.

    `open_turn` and `open_compact` are cleared by `session/end-seed`: whatever
    was open before the seam belongs to an earlier lifecycle (a crash), so it
    is stale and must not wedge the resumed session.
    """

    open_turn: Event | None = None
    open_compact: Event | None = None
    end_seed: Event | None = None
    stale_compacts: list[Event] = field(default_factory=list)
    last_turn: int = 0

    def apply(self, event: Event) -> None:
        kind = event["kind"]
        if kind == TURN_START:
            self.open_turn = event
            turn = event.get("turn")
            if isinstance(turn, int) and turn > self.last_turn:
                self.last_turn = turn
        elif kind == TURN_END:
            if self.open_turn is not None and self.open_turn.get("turn") == event.get("turn"):
                self.open_turn = None
        elif kind == COMPACT_START:
            self.open_compact = event
        elif kind == COMPACT_END:
            if self.open_compact is not None and event.get("start") in (
                None,
                self.open_compact["seq"],
            ):
                self.open_compact = None
        elif kind == END_SEED:
            if self.open_compact is not None:
                self.stale_compacts.append(self.open_compact)
            self.open_compact = None
            self.open_turn = None
            self.end_seed = event


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _format_ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass
class LoadResult:
    events: list[Event]
    torn: str | None
    good_bytes: int


def _parse_all(body: bytes) -> list[Any] | None:
    """One json.loads over the whole file: the fast path for a healthy log.

    Per-line parsing costs a call per event; a log of well-formed lines is
    also one well-formed array when joined, so parse that, and fall back to
    the line-by-line reader only to say which line is bad.
    """
    if not body:
        return []
    if b"\n\n" in body or body.startswith(b"\n"):
        return None  # a blank line: let the careful path name it
    try:
        parsed = orjson.loads(b"[" + body.replace(b"\n", b",") + b"]")
    except orjson.JSONDecodeError:
        return None
    return parsed


def _check(path: Path, lineno: int, event: Any, expected: int) -> None:
    if not isinstance(event, dict):
        raise LogCorruptError(path, lineno, "not a JSON object")
    if not isinstance(event.get("kind"), str):
        raise LogCorruptError(path, lineno, "missing 'kind'")
    seq = event.get("seq")
    if type(seq) is not int or seq != expected:
        raise LogCorruptError(path, lineno, f"expected seq {expected}, found {seq!r:.40}")
    check = SHAPES.get(event["kind"])
    problem = None if check is None else check(event)
    if problem is not None:
        raise LogCorruptError(path, lineno, problem)


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Bulk replay allocates many objects that all stay alive; collecting
    them mid-load is pure overhead (it halves replay speed at 100k events)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_events(path: Path) -> LoadResult:
    """Parse a log file; a torn last line is reported, any other bad line raises."""
    with paused_gc():
        return _read_events(path)


def _read_events(path: Path) -> LoadResult:
    data = path.read_bytes() if path.exists() else b""
    cut = data.rfind(b"\n") + 1
    body, tail = data[:cut], data[cut:]
    torn: str | None = None
    if tail.strip():
        # No trailing newline: the write was cut short by a crash.
        line = body.count(b"\n") + 1
        torn = (
            f"{path}:{line}: ignored a torn last line "
            f"({len(tail)} bytes) left by an interrupted write"
        )
    parsed = _parse_all(body[:-1]) if body else []
    if parsed is not None and len(parsed) == body.count(b"\n"):
        shapes = SHAPES
        for seq, event in enumerate(parsed, 1):
            if (
                type(event) is not dict
                or type(event.get("seq")) is not int
                or event["seq"] != seq
                or type(event.get("kind")) is not str
            ):
                _check(path, seq, event, seq)  # raises with the exact problem
            check = shapes.get(event["kind"])
            if check is not None and (problem := check(event)) is not None:
                raise LogCorruptError(path, seq, problem)
        return LoadResult(parsed, torn, cut)
    events: list[Event] = []
    for index, raw in enumerate(body.split(b"\n")[:-1]):
        lineno = index + 1
        if not raw.strip():
            raise LogCorruptError(path, lineno, "empty line")
        try:
            event = json.loads(raw)
        except UnicodeDecodeError:
            raise LogCorruptError(path, lineno, "not valid UTF-8") from None
        except json.JSONDecodeError as exc:
            raise LogCorruptError(path, lineno, f"not valid JSON ({exc.msg})") from None
        except ValueError as exc:  # e.g. an integer past the 4,300-digit limit
            raise LogCorruptError(path, lineno, f"not valid JSON ({exc})") from None
        except RecursionError:
            # orjson refuses deep nesting outright; json then runs out of stack.
            raise LogCorruptError(path, lineno, "not valid JSON (nested too deeply)") from None
        _check(path, lineno, event, lineno)
        events.append(event)
    return LoadResult(events, torn, cut)


def _torn_copy(path: Path, seq: int) -> Path:
    """A new file for torn bytes; an earlier crash's copy is never overwritten."""
    keep = path.with_name(f"{path.name}.torn-{seq}")
    attempt = 1
    while keep.exists():
        attempt += 1
        keep = path.with_name(f"{path.name}.torn-{seq}.{attempt}")
    return keep


class SessionLog:
    """One thread's log: replayed on open, appended one line per event.

    Each append reaches the OS before it returns (so a killed process keeps
    it); `flush()` adds the fsync that makes it survive a power cut.
    """

    def __init__(self, path: Path, *, clock: Clock = _utcnow) -> None:
        self.path = path
        self.clock = clock
        self.events: list[Event] = []
        self.tail = TailState()
        self.listeners: list[Listener] = []
        self.torn_report: str | None = None
        self._fh: Any = None

    @classmethod
    def open(cls, path: Path, *, clock: Clock = _utcnow) -> SessionLog:
        """Replay the file and keep it open for appends.

        A torn tail is cut off the file so the next append starts on a clean
        line; its bytes are kept beside the log, never silently dropped.
        """
        log = cls(path, clock=clock)
        private_dir(path.parent)
        loaded = read_events(path)
        if loaded.torn is not None:
            raw = path.read_bytes()[loaded.good_bytes :]
            keep = _torn_copy(path, len(loaded.events) + 1)
            with os.fdopen(open_private(keep, os.O_WRONLY | os.O_EXCL), "wb") as fh:
                fh.write(raw)
            with path.open("r+b") as fh:
                fh.truncate(loaded.good_bytes)
            log.torn_report = loaded.torn + f" (kept in {keep.name})"
        log.events = loaded.events
        with paused_gc():
            for event in log.events:
                log.tail.apply(event)
        log._fh = os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND), "a", encoding="utf-8")
        return log

    @property
    def next_seq(self) -> int:
        return len(self.events) + 1

    def append(self, kind: str, **fields: Any) -> Event:
        """Write one event; listeners run after the line is written.

        A listener may append in turn (re-entrancy is allowed): the event it
        sees is already durable and already counted in `tail`.
        """
        event: Event = {"seq": self.next_seq, "ts": _format_ts(self.clock()), "kind": kind}
        event.update(fields)
        line = orjson.dumps(event).decode() + "\n"
        if self._fh is None:
            raise RuntimeError(f"{self.path}: log is closed")
        self._fh.write(line)
        self._fh.flush()
        self.events.append(event)
        self.tail.apply(event)
        for listener in list(self.listeners):
            listener(event)
        return event

    def flush(self) -> None:
        """fsync: the bytes are on disk, not just in the OS cache."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
