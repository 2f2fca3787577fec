"""The append-only session log: one JSON object per line, per thread.

The log is the single source of truth. The surface the model sees, the turn
counter, the inbox that survives a crash and the compaction lock are all
derived from it by replay, so a reader only ever needs this file.

Each line is one `engine.events` Struct: a load gives typed events (or one
`file:line` error), and an append takes a typed payload and stamps it.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast

import msgspec
from msgspec.structs import replace

from engine.events import (
    KINDS,
    CompactEnd,
    CompactStart,
    EndSeed,
    Event,
    KnownEvent,
    LogEvent,
    TurnEnd,
    TurnStart,
    UnknownEvent,
    to_dict,
)
from engine.private import open_private, private_dir

Listener = Callable[[LogEvent], None]
Clock = Callable[[], datetime]
E = TypeVar("E", bound=Event | UnknownEvent)


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

    open_turn: TurnStart | None = None
    open_compact: CompactStart | None = None
    end_seed: EndSeed | None = None
    stale_compacts: list[CompactStart] = field(default_factory=list)
    last_turn: int = 0

    def apply(self, event: LogEvent) -> None:
        if isinstance(event, TurnStart):
            self.open_turn = event
            if event.turn > self.last_turn:
                self.last_turn = event.turn
        elif isinstance(event, TurnEnd):
            if self.open_turn is not None and self.open_turn.turn == event.turn:
                self.open_turn = None
        elif isinstance(event, CompactStart):
            self.open_compact = event
        elif isinstance(event, CompactEnd):
            if self.open_compact is not None and event.start in (None, self.open_compact.seq):
                self.open_compact = None
        elif isinstance(event, EndSeed):
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
    events: list[LogEvent]
    torn: str | None
    good_bytes: int


_FILE_DECODER = msgspec.json.Decoder(list[KnownEvent])
_LINE_DECODER = msgspec.json.Decoder(KnownEvent)
_ENCODER = msgspec.json.Encoder()
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def _decode_all(body: bytes) -> list[LogEvent] | None:
    """One typed decode of the whole file: the fast path for a healthy log.

    A log of well-formed lines is also one well-formed array when joined, so
    decode that; anything it does not take (a bad line, a kind this code does
    not know, a seq out of order) goes to the line-by-line reader, which says
    which line is bad or keeps the unknown event.
    """
    if not body:
        return []
    if b"\n\n" in body or body.startswith(b"\n"):
        return None  # a blank line: let the careful path name it
    try:
        events: list[LogEvent] = list(_FILE_DECODER.decode(b"[" + body.replace(b"\n", b",") + b"]"))
    except _DECODE_ERRORS:
        return None
    for expected, event in enumerate(events, 1):
        if event.seq != expected:
            return None
    return events


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
    parsed = _decode_all(body[:-1]) if body else []
    if parsed is not None and len(parsed) == body.count(b"\n"):
        return LoadResult(parsed, torn, cut)
    events = [parse_line(path, index + 1, raw) for index, raw in enumerate(body.split(b"\n")[:-1])]
    return LoadResult(events, torn, cut)


def _torn_copy(path: Path, seq: int) -> Path:
    """A new file for torn bytes; an earlier crash's copy is never overwritten."""
    keep = path.with_name(f"{path.name}.torn-{seq}")
    attempt = 1
    while keep.exists():
        attempt += 1
        keep = path.with_name(f"{path.name}.torn-{seq}.{attempt}")
    return keep


class LogWriteError(OSError):
    """An append that did not happen: the file is byte for byte as before it.

    An OSError (ENOSPC, EDQUOT, EFBIG, EIO, EROFS …) with the log's path, so
    callers that already treat disk failures as OSError keep working. A log
    opened read-only raises it too, with the reason as the whole message.
    """

    def __init__(self, path: Path, cause: OSError | str, *, read_only: bool = False) -> None:
        reason = cause if isinstance(cause, str) else (cause.strerror or str(cause))
        code = errno.EROFS if read_only else (getattr(cause, "errno", 0) or 0)
        self.path = path
        self.reason = reason
        self.message = reason if read_only else f"{path}: could not write to the log: {reason}"
        super().__init__(code, self.message)

    def __str__(self) -> str:
        return self.message


ListenerErrorHandler = Callable[[Listener, LogEvent, Exception], None]


def _report_listener_error(listener: Listener, event: LogEvent, exc: Exception) -> None:
    """A front end's callback failed; the engine goes on and says so once, on the logger."""
    logging.getLogger("trove").warning(
        "a log listener (%s) failed on %s: %s: %s",
        getattr(listener, "__qualname__", listener),
        event.kind,
        type(exc).__name__,
        exc,
    )


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


class SessionLog:
    """One thread's log: replayed on open, appended one line per event.

    Each append reaches the OS before it returns (so a killed process keeps
    it); `flush()` adds the fsync that makes it survive a power cut.

    An append is all or nothing: a write that fails part-way (disk full, a
    file size limit, an I/O error) is cut back off the file before
    `LogWriteError` is raised, so the next append continues with the right
    seq on a clean line. If even that cut fails, the log stops taking appends
    for the rest of the process rather than write after a partial line (the
    file then loads with a torn tail).

    Engine projections (the surface) run first and may raise: they are the
    engine's own state. Listeners (front ends) are isolated: one that raises
    is reported through `on_listener_error` and never reaches the caller.
    """

    def __init__(self, path: Path, *, clock: Clock = _utcnow) -> None:
        self.path = path
        self.clock = clock
        self.events: list[LogEvent] = []
        self.tail = TailState()
        self.listeners: list[Listener] = []
        self.projections: list[Listener] = []
        self.on_listener_error: ListenerErrorHandler = _report_listener_error
        self.torn_report: str | None = None
        self.read_only: str | None = None
        """Why appends are refused (None: they are not): another process holds the thread."""
        self._fd: int | None = None
        self._size = 0
        self._broken: str | None = None

    @classmethod
    def open(
        cls, path: Path, *, clock: Clock = _utcnow, read_only: str | None = None
    ) -> SessionLog:
        """Replay the file and keep it open for appends.

        A torn tail is cut off the file so the next append starts on a clean
        line; its bytes are kept beside the log, never silently dropped.
        With `read_only` (the reason) the file is only read: nothing is cut,
        and every append raises LogWriteError with that reason.
        """
        log = cls(path, clock=clock)
        loaded = read_events(path)
        if read_only is None:
            private_dir(path.parent)
            if loaded.torn is not None:
                raw = path.read_bytes()[loaded.good_bytes :]
                keep = _torn_copy(path, len(loaded.events) + 1)
                with os.fdopen(open_private(keep, os.O_WRONLY | os.O_EXCL), "wb") as fh:
                    fh.write(raw)
                with path.open("r+b") as fh:
                    fh.truncate(loaded.good_bytes)
                log.torn_report = loaded.torn + f" (kept in {keep.name})"
        else:
            log.read_only = read_only
        log.events = loaded.events
        with paused_gc():
            for event in log.events:
                log.tail.apply(event)
        if read_only is None:
            log._fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            log._size = os.fstat(log._fd).st_size
        return log

    @property
    def next_seq(self) -> int:
        return len(self.events) + 1

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Follow every appended event; the returned callable stops it (idempotent)."""
        self.listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self.listeners.remove(listener)

        return unsubscribe

    def append(self, payload: E) -> E:
        """Stamp the payload with the next seq and the time, and write it; projections
        and listeners run after the line is written. Returns the stamped event.

        A listener may append in turn (re-entrancy is allowed): the event it
        sees is already durable and already counted in `tail`.
        """
        if self.read_only is not None:
            raise LogWriteError(self.path, self.read_only, read_only=True)
        if self._broken is not None:
            raise LogWriteError(self.path, self._broken)
        if self._fd is None:
            raise LogWriteError(self.path, "the log is closed")
        stamped = replace(payload, seq=self.next_seq, ts=_format_ts(self.clock()))
        line, written = encode_line(stamped)
        event = cast(E, written)
        self._write(line)
        self.events.append(event)
        self.tail.apply(event)
        for projection in self.projections:
            projection(event)
        for listener in list(self.listeners):
            try:
                listener(event)
            except Exception as exc:  # a front end's failure never reaches the engine
                with contextlib.suppress(Exception):
                    self.on_listener_error(listener, event, exc)
        return event

    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        written = 0
        try:
            while written < len(data):
                written += self._raw_write(self._fd, data[written:])
        except OSError as exc:
            if written:
                try:
                    os.ftruncate(self._fd, self._size)
                except OSError as undo:
                    self._broken = (
                        f"a failed write could not be undone ({undo.strerror or undo}); "
                        "restart Trove to go on"
                    )
            raise LogWriteError(self.path, exc) from exc
        self._size += written

    def _raw_write(self, fd: int, data: bytes) -> int:
        """The one system call appends go through (fault-injection tests replace it)."""
        return os.write(fd, data)

    def flush(self) -> None:
        """fsync: the bytes are on disk, not just in the OS cache."""
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
