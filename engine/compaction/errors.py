"""The closed taxonomy of compaction failures and their exact user-facing text.

Each text says what state the user is left in, and says it exactly: nothing
was written, only the log changed (the conversation is as it was), the
conversation may have partly changed, or the finished compaction could not be
made durable. Appends to the log are all-or-nothing, so the transaction
knows which of these holds and passes it as `state`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Literal

from engine.errors import TroveError

if TYPE_CHECKING:
    from engine.compaction.outcome import CompactOutcome

ErrorKind = Literal["busy", "changed", "summary", "commit", "persistence"]
State = Literal["nothing", "log", "partial", "surface", "applied"]

_TEXT: dict[str, str] = {
    "busy": "compaction is busy: {detail}",
    "changed": (
        "compaction stopped: the messages being summarized changed while the summary was written"
    ),
    "summary": "compaction failed: the summary could not be produced ({detail})",
    "commit": "compaction failed while replacing the summarized messages ({detail})",
    "persistence": "compaction was applied but could not be saved to disk ({detail})",
}
_START_FAILED = "compaction could not start: the log could not be written ({detail})"

_STATE: dict[str, str] = {
    "nothing": "nothing was written, try again when it has finished",
    "log": "the conversation is unchanged, only the log records the attempt",
    "partial": "the conversation may have partly changed, check the transcript before going on",
    "surface": "this session uses the summary, after a restart it may not",
    "applied": "the summary is in the log and in use",
}
_DEFAULT_STATE: dict[str, State] = {
    "busy": "nothing",
    "changed": "log",
    "summary": "log",
    "commit": "partial",
    "persistence": "surface",
}
_LOCK_HELD = (
    "; the end of the attempt could not be written, so compaction stays locked until "
    "Trove is restarted"
)


class CompactionError(TroveError):
    """A failed compaction; `kind` is one of the five, str(e) the exact text."""

    def __init__(
        self,
        kind: ErrorKind,
        detail: str = "",
        *,
        state: State | None = None,
        lock_held: bool = False,
    ) -> None:
        self.kind: ErrorKind = kind
        self.detail = detail
        self.state: State = state or _DEFAULT_STATE[kind]
        self.lock_held = lock_held
        super().__init__(self._text())

    def _text(self) -> str:
        detail = self.detail or "no details"
        if self.kind == "persistence" and self.state == "nothing":
            head = _START_FAILED.format(detail=detail)
            tail = "nothing was written, the conversation is unchanged"
        else:
            head = _TEXT[self.kind].format(detail=detail)
            tail = _STATE[self.state]
        return f"{head}; {tail}" + (_LOCK_HELD if self.lock_held else "")

    def with_lock_held(self) -> CompactionError:
        """The same failure, when the close attempt after it failed too."""
        return CompactionError(self.kind, self.detail, state=self.state, lock_held=True)


def busy(detail: str) -> CompactionError:
    return CompactionError("busy", detail)


def not_started(detail: str) -> CompactionError:
    """The start marker could not be written: the lock was never taken."""
    return CompactionError("persistence", detail, state="nothing")


class CompactionCancelled(asyncio.CancelledError):  # noqa: N818 (it is a CancelledError)
    """Cancelled after the checkpoint was committed: the compaction did happen.

    Still a CancelledError (a cancelled turn stays cancelled, the exact reason
    is args[0]), but it carries the outcome so a front end says what is true.
    """

    def __init__(self, reason: str, outcome: CompactOutcome) -> None:
        super().__init__(reason)
        self.outcome = outcome
