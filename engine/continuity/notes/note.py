"""Task notes: a small notebook the model keeps across compactions, stored in the log.

Notes are `note/set` and `note/delete` events, so they survive compaction, resume
and forks with no second store. The notebook at a position is a replay of those
events, normalized at every step as a write is: malformed entries dropped, a
replaced key keeps its place, only the last few keys kept, and every note carries
`authority: "model_report"` and nothing else, so a forged or damaged line can
neither grow the notebook nor give a note authority. Direct writes check the syntax
of source ids; only the `task_note` tool checks that they are available.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from engine.continuity.archive.extract import is_source_id
from engine.continuity.archive.records import AUTHORITY
from engine.errors import TroveError
from engine.events import LogEvent, NoteDelete, NoteSet

MAX_NOTES = 8
MAX_NOTE_CHARS = 750
MAX_NOTE_SOURCES = 4
MAX_KEY_CHARS = 40


@dataclass(frozen=True, slots=True)
class Note:
    """One normalized note. Its authority is fixed: nothing a writer adds can change it."""

    key: str
    content: str
    source_ids: tuple[str, ...] = ()
    authority: ClassVar[str] = AUTHORITY

    def as_dict(self) -> dict[str, Any]:
        """The note as the tools, the notebook message and `trove notes --json` show it."""
        return {
            "key": self.key,
            "content": self.content,
            "source_ids": list(self.source_ids),
            "authority": self.authority,
        }


class NoteError(TroveError, ValueError):
    """A note write that breaks the rules; `code` is the tool error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_key(key: Any) -> str:
    """A key is 1-40 printable characters without whitespace (short, unambiguous)."""
    if not isinstance(key, str) or not key:
        raise NoteError("invalid_key", "key must be a non-empty string")
    if len(key) > MAX_KEY_CHARS:
        raise NoteError("invalid_key", f"key must be at most {MAX_KEY_CHARS} characters")
    if any(ch.isspace() for ch in key) or not key.isprintable():
        raise NoteError("invalid_key", "key must not contain whitespace or control characters")
    return key


def check_content(content: Any) -> str:
    if not isinstance(content, str):
        raise NoteError("invalid_content", "content must be a string")
    if len(content) > MAX_NOTE_CHARS:
        raise NoteError(
            "invalid_content",
            f"content must be at most {MAX_NOTE_CHARS} characters (got {len(content)})",
        )
    return content


def check_source_ids(source_ids: Any) -> list[str]:
    """Up to four syntactically valid source ids, duplicates removed, order kept."""
    if source_ids is None:
        return []
    if not isinstance(source_ids, list):
        raise NoteError("invalid_source_ids", "source_ids must be a list of source ids")
    if not all(is_source_id(s) for s in source_ids):
        raise NoteError(
            "invalid_source_ids", "each source id is 'r' followed by 32 lowercase hex digits"
        )
    unique = list(dict.fromkeys(source_ids))
    if len(unique) > MAX_NOTE_SOURCES:
        raise NoteError("invalid_source_ids", f"at most {MAX_NOTE_SOURCES} source ids per note")
    return unique


def is_deletion(content: str) -> bool:
    """Blank content deletes: the model has one verb (task_note) for all three actions."""
    return not content.strip()


def normalize_note(entry: Any) -> Note | None:
    """The canonical form of one stored note, or None when it is malformed or a deletion."""
    if not isinstance(entry, Mapping):
        return None
    try:
        key = check_key(entry.get("key"))
        content = check_content(entry.get("content"))
        sources = check_source_ids(entry.get("source_ids"))
    except NoteError:
        return None
    if is_deletion(content):
        return None
    return Note(key, content, tuple(sources))


def _keep_last(book: dict[str, Note]) -> None:
    while len(book) > MAX_NOTES:
        del book[next(iter(book))]


def normalize_notebook(entries: Iterable[Any]) -> list[Note]:
    """Normalize a stored notebook (any list of note-like entries), in order.

    Later entries for a key replace earlier ones in place; the last eight
    valid keys are kept. A mapping of key -> note is accepted too.
    """
    if isinstance(entries, Mapping):
        entries = [
            {"key": k, **v} if isinstance(v, Mapping) and "key" not in v else v
            for k, v in entries.items()
        ]
    elif isinstance(entries, str | bytes) or not isinstance(entries, Iterable):
        entries = ()
    book: dict[str, Note] = {}
    for entry in entries:
        note = normalize_note(entry)
        if note is not None:
            book[note.key] = note
            _keep_last(book)
    return list(book.values())


def notebook_at(events: Iterable[LogEvent]) -> list[Note]:
    """The notebook at the position the events end at (a normalized replay)."""
    book: dict[str, Note] = {}
    for event in events:
        if isinstance(event, NoteSet):
            if is_deletion(event.content):
                book.pop(event.key, None)
                continue
            stored = {"key": event.key, "content": event.content, "source_ids": event.source_ids}
            note = normalize_note(stored)
            if note is not None:
                book[note.key] = note
                _keep_last(book)
        elif isinstance(event, NoteDelete):
            book.pop(event.key, None)
    return list(book.values())


def note_event(key: Any, content: Any, source_ids: Any = None) -> NoteSet | NoteDelete:
    """The event of a syntax-checked note write; empty content is a deletion."""
    key = check_key(key)
    content = check_content(content)
    if is_deletion(content):
        return NoteDelete(key=key)
    return NoteSet(key=key, content=content, source_ids=check_source_ids(source_ids))


def write_note(
    append: Callable[[NoteSet | NoteDelete], LogEvent],
    key: Any,
    content: Any,
    source_ids: Any = None,
) -> LogEvent:
    """Append a note write through `append(event)` (e.g. `SessionLog.append`)."""
    return append(note_event(key, content, source_ids))
