"""What counts as a source: the one extraction used for capture and for active search.

Capture (messages leaving the surface at compaction) and search over the
active history must agree on what a message's text is, or a source id seen in
one place would not exist in the other. So both go through `extract_records`.

Included: visible user and assistant text, tool-call names with their
arguments (rendered `name(arguments)`), tool-result text. Excluded: system
messages, hidden framework injections, reasoning fields, images, binary data
and every typed content part other than `{"type": "text"}`, even one that
carries a `text` field. A mixed content list keeps its strings and text parts
in their original order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from engine.continuity.archive.records import Source
from engine.events import LogEvent, UserMessage
from engine.util.tool_cut import source_id as source_id  # the id is defined below the surface

SOURCE_ID = re.compile(r"^r[0-9a-f]{32}$")
ROLES = ("user", "assistant", "tool")
# The continuity tools' own traffic: a call that only searches, reads or notes,
# and its result (a copy of other sources). Still sources, but search ranks
# them last so repeated searches cannot crowd out the originals.
ECHO_TOOLS = frozenset({"history_search", "history_read", "task_note"})


class OfferedMessage(NamedTuple):
    """One message offered for extraction: a message, not yet a `Source`.

    Extraction turns it into at most one `records.Source` (none for an
    injection or an empty message), which is why it is a type of its own.

    `seq` is the log seq of the message (its identity). `hidden` marks a
    framework injection (a user message whose log event has `source:
    "inject"`); those are never sources.
    """

    seq: int
    role: str
    message: Mapping[str, Any]
    hidden: bool = False


def is_source_id(value: object) -> bool:
    """Syntax check only; availability is a question for the history view."""
    return isinstance(value, str) and SOURCE_ID.match(value) is not None


def content_text(content: Any) -> str:
    """The visible text of a message's `content`, or '' when it has none.

    A string is itself. A list keeps plain strings and `type: text` parts in
    order, joined by newlines; images, audio, files and any other typed part
    are dropped even when they carry a `text` field. Bytes are binary data
    and never text.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif (
            isinstance(part, Mapping)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ):
            parts.append(part["text"])
    return "\n".join(p for p in parts if p)


def _call_text(call: Any) -> str:
    if not isinstance(call, Mapping):
        return ""
    function = call.get("function")
    if not isinstance(function, Mapping):
        return ""
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return ""
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = ""
    return f"{name}({arguments})"


def message_text(role: str, message: Mapping[str, Any]) -> str:
    """The text one message contributes, following the module's inclusion rules.

    Only `content` and, for assistants, `tool_calls` are read: reasoning
    fields (`reasoning`, `reasoning_content`) and anything else are never
    looked at, so they cannot leak into the archive.
    """
    if role not in ROLES:
        return ""
    pieces = [content_text(message.get("content"))]
    if role == "assistant":
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            pieces.extend(_call_text(call) for call in calls)
    return "\n".join(p for p in pieces if p)


def extract_records(
    items: Iterable[OfferedMessage | Sequence[Any]], *, max_record_chars: int | None = None
) -> list[Source]:
    """Sources for the given messages, in input order; messages with no text give none.

    With `max_record_chars`, longer texts are cut and marked truncated (the
    archive does this at capture; active search needs the full text).
    """
    records: list[Source] = []
    call_names: dict[Any, Any] = {}
    for item in items:
        seq, role, message, hidden = OfferedMessage(*item)
        if hidden or not isinstance(message, Mapping) or isinstance(seq, bool):
            continue
        if not isinstance(seq, int):
            continue
        text = message_text(role, message)
        if not text:
            continue
        record = Source(
            source_id(role, seq, text), role, seq, text, echo=_is_echo(role, message, call_names)
        )
        if max_record_chars is not None:
            record = record.cut(max_record_chars)
        records.append(record)
    return records


def _is_echo(role: str, message: Mapping[str, Any], call_names: dict[Any, Any]) -> bool:
    """Whether a message is continuity-tool traffic; learns call names as it goes."""
    if role == "tool":
        return call_names.get(message.get("tool_call_id")) in ECHO_TOOLS
    if role != "assistant":
        return False
    calls = message.get("tool_calls")
    names = []
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if isinstance(call, Mapping):
            call_names[call.get("id")] = name
        names.append(name)
    return (
        bool(names)
        and not content_text(message.get("content"))
        and all(n in ECHO_TOOLS for n in names)
    )


def hidden_seqs(events: Iterable[LogEvent]) -> set[int]:
    """Seqs of framework injections: user messages logged with `source: "inject"`."""
    return {
        event.seq for event in events if isinstance(event, UserMessage) and event.source == "inject"
    }


def surface_inputs(entries: Iterable[Any], hidden: set[int]) -> list[OfferedMessage]:
    """OfferedMessages for the entries of an `engine.surface.Surface`.

    Checkpoints are summaries written by compaction, not sources, so they are
    skipped; `hidden` is usually `hidden_seqs(events)`.
    """
    return [
        OfferedMessage(entry.seq, entry.role, entry.message, entry.seq in hidden)
        for entry in entries
        if not getattr(entry, "checkpoint", False)
    ]
