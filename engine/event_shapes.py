"""The payload each event kind must carry, checked once when a log is read.

Readers (the surface, the driver's inbox, the tail, continuity, the front
ends) index events freely, so a line that is valid JSON of the wrong shape
(`"text": 12345`, `"tool_calls": "x"`) would surface as a TypeError deep in
one of them. Checking the fields they use at load time turns it into one
`file:line` error instead, and lets every reader trust the types.

Only the fields some reader uses are checked, and only their types: unknown
fields and unknown kinds pass (a newer writer may add them). A field that
may be absent is checked only when present.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Problem = str | None
Check = Callable[[dict[str, Any]], Problem]

_MISSING = object()
NONE = type(None)

# One accepted-type set per field: exact types, so `true` is not an int.
STR = frozenset({str})
INT = frozenset({int})
BOOL = frozenset({bool})
DICT = frozenset({dict})
LIST = frozenset({list})
OPT_STR = frozenset({str, NONE})
OPT_INT = frozenset({int, NONE})
OPT_LIST = frozenset({list, NONE})
OPT_DICT = frozenset({dict, NONE})

_NAMES = {str: "a string", int: "an integer", bool: "a boolean", dict: "an object", list: "a list"}


def _describe(accepted: frozenset[type]) -> str:
    names = [_NAMES[t] for t in (str, int, bool, dict, list) if t in accepted]
    if NONE in accepted:
        names.append("null")
    return " or ".join(names)


def _list_of(accepted: frozenset[type]) -> Callable[[list[Any]], Problem]:
    def check(items: list[Any]) -> Problem:
        for item in items:
            if type(item) not in accepted:
                return f"holds {item!r:.40}, expected only {_describe(accepted)} items"
        return None

    return check


def _object(*fields: tuple[str, frozenset[type], bool]) -> Callable[[dict[str, Any]], Problem]:
    """A nested object whose listed fields have these types (`True` = required)."""

    def check(value: dict[str, Any]) -> Problem:
        for name, accepted, required in fields:
            item = value.get(name, _MISSING)
            if item is _MISSING:
                if required:
                    return f"has no '{name}'"
            elif type(item) not in accepted:
                return f"has '{name}' that is not {_describe(accepted)}"
        return None

    return check


_TOOL_CALL = _object(("id", STR, True), ("name", STR, True), ("arguments", OPT_STR, False))


def _tool_calls(calls: list[Any]) -> Problem:
    for index, call in enumerate(calls):
        if type(call) is not dict:
            return f"item {index} is not an object"
        problem = _TOOL_CALL(call)
        if problem is not None:
            return f"item {index} {problem}"
    return None


Field = tuple[str, frozenset[type], bool, Callable[[Any], Problem] | None]


def _shape(kind: str, *fields: Field) -> Check:
    def check(event: dict[str, Any]) -> Problem:
        for name, accepted, required, inner in fields:
            value = event.get(name, _MISSING)
            if value is _MISSING:
                if required:
                    return f"{kind} without '{name}'"
                continue
            if type(value) not in accepted:
                return f"{kind} '{name}' is not {_describe(accepted)}"
            if inner is not None and value is not None:
                problem = inner(value)
                if problem is not None:
                    return f"{kind} '{name}' {problem}"
        return None

    return check


_INTS = _list_of(INT)
_STRS = _list_of(STR)
_CHECKPOINT = _object(
    ("summary", INT, False),
    ("start", INT, False),
    ("first", INT, False),
    ("last", INT, False),
    ("count", INT, False),
    ("forked_from", INT, False),
)


def _field(name: str, accepted: frozenset[type], inner: Any = None) -> Field:
    return (name, accepted, False, inner)


def _required(name: str, accepted: frozenset[type], inner: Any = None) -> Field:
    return (name, accepted, True, inner)


SHAPES: dict[str, Check] = {
    "user/message": _shape(
        "user/message",
        _field("text", STR),
        _field("checkpoint", OPT_DICT, _CHECKPOINT),
        _field("item_id", INT),
        _field("source", STR),
        _field("placement", STR),
    ),
    "assistant/message": _shape(
        "assistant/message",
        _field("content", OPT_STR),
        _field("tool_calls", OPT_LIST, _tool_calls),
    ),
    "tool/result": _shape(
        "tool/result", _field("call_id", STR), _field("content", STR), _field("name", OPT_STR)
    ),
    "turn/start": _shape("turn/start", _required("turn", INT), _field("items", LIST, _INTS)),
    "turn/end": _shape(
        "turn/end", _field("turn", INT), _field("status", STR), _field("error", OPT_STR)
    ),
    "compact/start": _shape(
        "compact/start",
        _field("turn", OPT_INT),
        _field("seqs", LIST, _INTS),
    ),
    "compact/summary": _shape(
        "compact/summary",
        _field("start", INT),
        _field("summary", STR),
        _field("replaced", OPT_LIST, _INTS),
    ),
    "compact/end": _shape(
        "compact/end", _field("start", INT), _field("turn", OPT_INT), _field("error", OPT_STR)
    ),
    "compact/archived": _shape(
        "compact/archived", _required("start", INT), _field("recovered", BOOL)
    ),
    "command/run": _shape("command/run", _field("name", STR), _field("args", STR)),
    "command/done": _shape(
        "command/done", _field("name", STR), _field("run", INT), _field("error", OPT_STR)
    ),
    "session/end-seed": _shape("session/end-seed", _field("previous", INT)),
    "session/fork": _shape("session/fork", _field("from_thread", STR), _field("from_seq", INT)),
    "inbox/queued": _shape(
        "inbox/queued", _field("text", STR), _field("waking", BOOL), _field("placement", STR)
    ),
    "inbox/edited": _shape("inbox/edited", _required("item_id", INT), _field("text", STR)),
    "inbox/removed": _shape("inbox/removed", _required("item_id", INT)),
    # Notes: the notebook replay (continuity/notes.py) applies the limits;
    # the types are the log's to promise.
    "note/set": _shape(
        "note/set",
        _required("key", STR),
        _required("content", STR),
        _field("source_ids", OPT_LIST, _STRS),
    ),
    "note/delete": _shape("note/delete", _required("key", STR)),
}


def shape_problem(event: dict[str, Any]) -> Problem:
    """Why this event's payload is not the shape its kind promises, or None."""
    check = SHAPES.get(event["kind"])
    return None if check is None else check(event)
