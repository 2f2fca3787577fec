"""Archive statuses in plain words, with what each one means for the user.

The engine speaks in status codes (`partially_expired`, `scope_unavailable`
…) because the model and scripts need a stable contract. People need to know
what happened and what to do about it, so every status the inspector shows
goes through this module: one wording for the whole pane.
"""

from __future__ import annotations

from textual.content import Content

from engine.continuity.batch_report import BatchState

HISTORY: dict[str, tuple[str, str, str]] = {
    # status: (short label, style, what it means for the user)
    "uninitialized": (
        "nothing archived yet",
        "$text-muted",
        "no compaction has happened in this thread, so search covers the messages "
        "still in the conversation.",
    ),
    "available": (
        "available",
        "$text-success",
        "every compacted message this thread refers to is stored and can be read word for word.",
    ),
    "partially_expired": (
        "partially expired",
        "$text-warning",
        "some older compacted messages were removed to stay within the archive's size "
        "limit; re-check facts that came from them.",
    ),
    "unavailable": (
        "unavailable",
        "$text-error",
        "part of the compacted history could not be stored or opened, so it is incomplete; "
        "re-check anything you rely on from before a compaction.",
    ),
    "scope_unavailable": (
        "from another thread",
        "$text-warning",
        "part of this history was archived for another user or thread (a copied log) "
        "and cannot be read here.",
    ),
}

CITATION: dict[str, tuple[str, str, str]] = {
    "available": ("available", "$text-success", "stored; Enter opens it in the Reader."),
    "partially_expired": (
        "expired",
        "$text-warning",
        "the compacted message was removed to stay within the archive's size limit; "
        "re-check this note.",
    ),
    "unavailable": (
        "unavailable",
        "$text-error",
        "this message cannot be read (never archived, or the archive failed); "
        "do not trust the note without re-checking.",
    ),
    "scope_unavailable": (
        "other thread",
        "$text-warning",
        "cited from history archived for another user or thread; it cannot be read here.",
    ),
}

BATCH: dict[BatchState, tuple[str, str, str]] = {
    "reachable": ("stored", "$text-success", "its messages can be read word for word"),
    "expired": (
        "expired",
        "$text-warning",
        "removed to keep the archive within its size limit; its messages are gone",
    ),
    "unlinked": (
        "not linked",
        "$text-muted",
        "stored, but no compaction in this thread's log points at it, so it is not read",
    ),
    "unreadable": (
        "unreadable",
        "$text-error",
        "the archive file could not be opened",
    ),
}

TRUNCATED = (
    "Truncated: the archive kept only the beginning of this message "
    "(task_continuity.max_record_chars); the rest was not stored."
)

DISABLED = "Task continuity is off (task_continuity.enabled: false): nothing is archived."


def _words(table: dict[str, tuple[str, str, str]], status: str) -> tuple[str, str, str]:
    return table.get(status, (status.replace("_", " "), "$text-warning", ""))


def history_label(status: str) -> Content:
    """The short coloured label of a history status, for headers and lines of a list."""
    label, style, _ = _words(HISTORY, status)
    return Content.styled(label, style)


def history_line(status: str, reason: str | None = None) -> Content:
    """'History: <label> — <what it means>', plus the engine's reason when it gave one."""
    label, style, meaning = _words(HISTORY, status)
    out = Content.assemble(("History: ", "bold"), (label, f"bold {style}"))
    if meaning:
        out = Content.assemble(out, " — ", meaning)
    if reason and status != "available":
        out = Content.assemble(out, ("\nReason: ", "$text-muted"), (reason, "$text-muted"))
    return out


def citation_label(status: str) -> Content:
    label, style, _ = _words(CITATION, status)
    return Content.styled(label, f"bold {style}")


def citation_meaning(status: str) -> str:
    return _words(CITATION, status)[2]


def batch_label(state: BatchState) -> Content:
    label, style, _ = BATCH[state]
    return Content.styled(label, style)


def batch_meaning(state: BatchState) -> str:
    return BATCH[state][2]
