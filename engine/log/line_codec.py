"""One log line and one typed event, both ways: decode (checked) and encode (read back).

A line is one `engine.events` Struct as JSON. Decoding takes the fast typed
path first and falls back to a careful one that names the bad line
(`LogCorruptError`, `file:line`: where the log's consistent prefix ends) or
keeps a kind this code does not know.
Encoding reads its own line back, so what this process writes always loads.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace

from engine.errors import TroveError
from engine.events import KINDS, KnownEvent, LogEvent, UnknownEvent, to_dict


class LogCorruptError(TroveError):
    """A line other than a torn tail is unreadable, or breaks the seq order.

    It ends what loads: the events before it are the log's consistent prefix
    (`LoadResult.damage`), and the writer moves it and every byte after it
    into a quarantine file beside the log (`SessionLog.open`).
    """

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


_LINE_DECODER = msgspec.json.Decoder(KnownEvent)
_ENCODER = msgspec.json.Encoder()
_SEQ = operator.attrgetter("seq")
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def decode_lines(lines: Iterable[bytes], first_seq: int = 1) -> list[LogEvent] | None:
    """The typed decode of every line (a trailing newline is fine): the fast path.

    Line by line, because joining the file into one array copies it and
    parses slower. Anything this does not take (a bad line, a kind this code
    does not know, a seq out of order) returns None for the line-by-line
    reader, which says which line is bad or keeps the unknown event.
    """
    try:
        events: list[LogEvent] = list(map(_LINE_DECODER.decode, lines))
    except _DECODE_ERRORS:
        return None
    if not in_order(events, first_seq):
        return None
    return events


def in_order(events: list[LogEvent], first_seq: int = 1) -> bool:
    """Every seq in order from `first_seq`, as a log's lines are numbered; compared in C
    (a Python loop is ~10 % of a replay)."""
    return list(map(_SEQ, events)) == list(range(first_seq, first_seq + len(events)))


def _check(path: Path, lineno: int, event: Any, expected: int) -> None:
    if not isinstance(event, dict):
        raise LogCorruptError(path, lineno, "not a JSON object")
    if not isinstance(event.get("kind"), str):
        raise LogCorruptError(path, lineno, "missing 'kind'")
    seq = event.get("seq")
    if type(seq) is not int or seq != expected:
        raise LogCorruptError(path, lineno, f"expected seq {expected}, found {seq!r:.40}")


def parse_line(path: Path, lineno: int, raw: bytes) -> LogEvent:
    """One line: a typed event, an unknown kind kept, or a file:line error."""
    try:
        event: LogEvent = _LINE_DECODER.decode(raw)
    except _DECODE_ERRORS:
        pass
    else:
        if event.seq == lineno:
            return event
    # The careful way, to name the problem (or keep a kind this code does not know).
    if not raw.strip():
        raise LogCorruptError(path, lineno, "empty line")
    try:
        value = json.loads(raw)
    except UnicodeDecodeError:
        raise LogCorruptError(path, lineno, "not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise LogCorruptError(path, lineno, f"not valid JSON ({exc.msg})") from None
    except ValueError as exc:  # e.g. an integer past the 4,300-digit limit
        raise LogCorruptError(path, lineno, f"not valid JSON ({exc})") from None
    except RecursionError:
        raise LogCorruptError(path, lineno, "not valid JSON (nested too deeply)") from None
    _check(path, lineno, value, lineno)
    return from_dict(value, path=path, lineno=lineno)


def decode_line(raw: bytes) -> LogEvent:
    """One line on its own, its seq unchecked: for tools that follow a log as it grows.

    Raises ValueError for a line that is not a log event, LogCorruptError for
    one of the wrong shape.
    """
    try:
        event: LogEvent = _LINE_DECODER.decode(raw)
    except _DECODE_ERRORS:
        value = json.loads(raw)
        if not isinstance(value, dict) or type(value.get("seq")) is not int:
            raise ValueError("not a log event") from None
        if not isinstance(value.get("kind"), str):
            raise ValueError("not a log event") from None
        return from_dict(value, path=Path("<line>"), lineno=value["seq"])
    return event


def from_dict(value: dict[str, Any], *, path: Path, lineno: int) -> LogEvent:
    """A parsed line as its typed event (`seq` and `kind` already checked)."""
    kind = value["kind"]
    if kind not in KINDS:
        fields = {name: item for name, item in value.items() if name not in _STAMP}
        return UnknownEvent(seq=value["seq"], ts=str(value.get("ts", "")), kind=kind, fields=fields)
    try:
        event: LogEvent = msgspec.convert(value, KnownEvent)
    except msgspec.ValidationError as exc:
        raise LogCorruptError(path, lineno, f"{kind}: {exc}") from None
    except RecursionError:
        raise LogCorruptError(path, lineno, f"{kind}: nested too deeply") from None
    return event


_STAMP = frozenset({"seq", "ts", "kind"})


def _scrub(value: Any) -> Any:
    """Lone surrogates (valid in JSON escapes, so a model can send them) cannot be
    encoded as UTF-8; they become U+FFFD rather than failing the append."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {key: _scrub(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(item) for item in value]
    return value


def encode_line(event: LogEvent) -> tuple[bytes, LogEvent]:
    """The event's line, and the event as read back from that line.

    Reading it back is what makes "a thread's log always loads" hold for what
    this process writes: a payload built with the wrong types (Structs do not
    check on construction) is refused here, before anything is written. The
    event returned is the one a replay will see (lone surrogates scrubbed).
    """
    value: Any = to_dict(event) if isinstance(event, UnknownEvent) else event
    try:
        line = _ENCODER.encode(value) + b"\n"
    except UnicodeEncodeError:
        line = _ENCODER.encode(_scrub(to_dict(event))) + b"\n"
    if isinstance(event, UnknownEvent) and event.kind not in KINDS:
        fields = {name: item for name, item in _scrub(event.fields).items()}
        return line, replace(event, fields=fields)
    try:  # a known kind, even when given as raw fields: as a replay will read it
        return line, _LINE_DECODER.decode(line)
    except msgspec.ValidationError as exc:
        raise TypeError(f"a {event.kind} payload of the wrong shape: {exc}") from None
