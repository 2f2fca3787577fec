"""What the continuity layer passes around: a `Source` and a search `Hit`.

A source is one message's text with an id that names that exact version. The
same type serves every place a source appears (extracted from the active
history, written by a capture, read back from the archive, listed for a
batch), so a reader never converts between shapes; `batch` says where this
copy lives. A hit is a source a query found, with how well it matched.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

AUTHORITY = "model_report"
"""What every note and every history result is marked: a record of what was said (a
model's report, the history's text), data and never instructions."""


@dataclass(frozen=True, slots=True)
class Source:
    """One source: the text of one message, with an id that names this exact version.

    `echo` marks continuity-tool traffic (see `extract.ECHO_TOOLS`) and
    `batch` the archive batch this copy was read from (None: the active
    history); neither is part of the identity.
    """

    source_id: str
    role: str
    seq: int
    text: str
    truncated: bool = False
    echo: bool = False
    batch: int | None = None

    @property
    def chars(self) -> int:
        """Length of the text as stored (after any cut)."""
        return len(self.text)

    @property
    def origin(self) -> Literal["active", "archive"]:
        return "active" if self.batch is None else "archive"

    def cut(self, max_chars: int) -> Source:
        """The same source shortened to `max_chars`, marked truncated.

        The id stays the id of the full text: a citation made against the
        active message still names the archived (shortened) copy.
        """
        if len(self.text) <= max_chars:
            return self
        return replace(self, text=self.text[:max_chars], truncated=True)


@dataclass(frozen=True, slots=True)
class Hit:
    """A source a search found.

    `every` is True when the source holds every query term (the tier it was
    found in); `matched` counts the distinct terms it holds, which orders
    partial matches and labels a result "all" or "some".
    """

    source: Source
    matched: int
    every: bool

    def recency(self) -> tuple[int, int, int]:
        """Active messages are newer than anything archived; then the newest batch."""
        batch, seq = self.source.batch, self.source.seq
        return (1, 0, seq) if batch is None else (0, batch, seq)
