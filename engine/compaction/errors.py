"""The closed taxonomy of compaction failures and their exact user-facing text.

Each text says what state the user is left in: only the log changed (the
conversation is as it was), the conversation may have partly changed, or
the finished compaction could not be made durable.
"""

from __future__ import annotations

from typing import Literal

ErrorKind = Literal["busy", "changed", "summary", "commit", "persistence"]

_TEXT: dict[str, str] = {
    "busy": ("Compaction is busy: {detail}. Nothing was written; try again when it has finished."),
    "changed": (
        "Compaction stopped: the messages being summarized changed while the summary was "
        "written. The conversation is unchanged; only the log records the attempt."
    ),
    "summary": (
        "Compaction failed: the summary could not be produced ({detail}). The conversation "
        "is unchanged; only the log records the attempt."
    ),
    "commit": (
        "Compaction failed while replacing the summarized messages ({detail}). The "
        "conversation may have partly changed; check the transcript before going on."
    ),
    "persistence": (
        "Compaction was applied but could not be saved to disk ({detail}). This session "
        "uses the summary; after a restart it may not."
    ),
}


class CompactionError(Exception):
    """A failed compaction; `kind` is one of the five, str(e) the exact text."""

    def __init__(self, kind: ErrorKind, detail: str = "") -> None:
        self.kind: ErrorKind = kind
        self.detail = detail
        super().__init__(_TEXT[kind].format(detail=detail or "no details"))


def busy(detail: str) -> CompactionError:
    return CompactionError("busy", detail)
