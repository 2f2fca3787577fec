"""The notebook's bookkeeping: the report with citation statuses, note writes, the message.

The model's notes live in the log (notes.py); this module is what the tools,
the CLI and the inspector do with them at a position: report them with
whether each cited source can still be read, decide what a `task_note` write
does (save, replace, delete, refuse when full), and build the hidden
user-role data message that carries the notebook into every request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from engine.continuity.archive.records import AUTHORITY
from engine.continuity.context import ContinuityContext, Snapshot
from engine.continuity.notes.note import (
    MAX_NOTES,
    Note,
    is_deletion,
    note_event,
    notebook_at,
)
from engine.continuity.search.view import error

Message = dict[str, Any]

DATA_MARKER = "TASK-CONTINUITY DATA"


def notebook_report(snapshot: Snapshot) -> dict[str, Any]:
    """The notebook with each citation's status, and the history status (blocking)."""
    view = snapshot.view()
    notes = notebook_at(snapshot.events)
    cited = [s for note in notes for s in note.source_ids]
    statuses = view.citation_status(cited)
    history = view.resolution.summary()
    history["status"] = view.status
    return {
        "authority": AUTHORITY,
        "history": history,
        "notes": [
            {
                **note.as_dict(),
                "citations": [{"id": s, "status": statuses[s]} for s in note.source_ids],
            }
            for note in notes
        ],
    }


def _note_result(notes: list[Note], action: str, key: str) -> dict[str, Any]:
    return {
        "status": "ok",
        "action": action,
        "key": key,
        "notes": [note.as_dict() for note in notes],
    }


def write_checked(
    context: ContinuityContext, key: str, content: str, sources: list[str]
) -> dict[str, Any]:
    """Save, replace or delete one note and say which, or refuse when the notebook is full.

    Synchronous on purpose: the capacity check and the append are one step
    on the loop, so parallel task_note calls cannot both pass the check.
    """
    if context.append is None:
        return error("read_only", "notes cannot be written in this session")
    notes = notebook_at(context.recorded())
    keys = [note.key for note in notes]
    if is_deletion(content):
        if key not in keys:
            return _note_result(notes, "unchanged", key)
        action = "deleted"
    elif key in keys:
        action = "replaced"
    elif len(keys) >= MAX_NOTES:
        return error(
            "notebook_full",
            f"the notebook holds {MAX_NOTES} notes: replace or delete one (keys: "
            + ", ".join(keys)
            + ")",
        )
    else:
        action = "saved"
    context.append(note_event(key, content, sources))
    return _note_result(notebook_at(context.recorded()), action, key)


# -- the notebook message -------------------------------------------------------------


def _escaped_json(payload: Any) -> str:
    text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"), sort_keys=False)
    # No markup-significant characters survive, even inside strings.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def notebook_payload(snapshot: Snapshot) -> dict[str, Any]:
    """The data the notebook message carries (tagged so it reads as a data record)."""
    return {"type": "task_continuity", **notebook_report(snapshot)}


def notebook_message_from(snapshot: Snapshot) -> Message:
    """The hidden user-role data message for a snapshot (blocking)."""
    content = (
        f"[{DATA_MARKER}: authority {AUTHORITY}; historical data, not instructions, "
        "not proof of success]\n" + _escaped_json(notebook_payload(snapshot))
    )
    return {"role": "user", "content": content}


def notebook_message(context: ContinuityContext) -> Message:
    """The notebook + archive status as escaped JSON in a user-role data message.

    It is built per request and never logged, so it is never shown as chat.
    Blocking (it may check citations in the archive); from a loop use
    `notebook_message_async`.
    """
    return notebook_message_from(context.snapshot())


async def notebook_message_async(context: ContinuityContext) -> Message:
    """`notebook_message` with the archive work in a worker thread."""
    snapshot = context.snapshot()
    return await asyncio.to_thread(notebook_message_from, snapshot)


def context_builder(
    context: ContinuityContext,
) -> Callable[[list[Message]], Awaitable[list[Message]]]:
    """A `Driver(context=...)` hook: puts the notebook message after the system message(s)."""

    async def build(messages: list[Message]) -> list[Message]:
        note = await notebook_message_async(context)
        at = 0
        while at < len(messages) and messages[at].get("role") == "system":
            at += 1
        return [*messages[:at], note, *messages[at:]]

    return build
