"""Choosing what to compact, and checking it is still there afterwards.

A span is a run of surface entries named by their log seqs. It never splits
a tool call from its result, and it leaves the most recent context (up to
`keep_recent_tokens`) on the surface. Stability comes in the two forms the
transaction needs: the selected span alone, or the whole surface.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.surface import Entry, Surface


@dataclass(frozen=True)
class Span:
    """Selected entries, in surface order, with their price when selected."""

    seqs: tuple[int, ...]
    tokens: int

    @property
    def first(self) -> int:
        return self.seqs[0]

    @property
    def last(self) -> int:
        return self.seqs[-1]


def _balanced(entries: Sequence[Entry]) -> bool:
    calls = {call for entry in entries for call in entry.call_ids}
    results = {entry.result_of for entry in entries if entry.result_of}
    return calls == results


def span_of(entries: Sequence[Entry]) -> Span:
    return Span(tuple(e.seq for e in entries), sum(e.tokens for e in entries))


def _useful(entries: Sequence[Entry]) -> bool:
    """Worth a model call: more than one entry, or one that is not already a summary."""
    return len(entries) > 1 or (len(entries) == 1 and not entries[0].checkpoint)


def open_turn_start(surface: Surface, turn: int) -> int | None:
    """The surface index of the open turn's own prompt (None: it has none there)."""
    return next(
        (
            i
            for i, e in enumerate(surface.entries)
            if e.turn == turn and e.role == "user" and not e.checkpoint
        ),
        None,
    )


def select_range(
    surface: Surface, keep_recent_tokens: int, *, before: int | None = None
) -> Span | None:
    """The longest balanced prefix that leaves the recent context alone.

    When the recent-context budget would keep everything, the last user
    exchange is kept instead, so an explicit /compact always has work to
    do once there is more than one exchange. `before` bounds the prefix to
    the entries ahead of that index (automatic compaction passes the open
    turn's prompt, which the request is answering). None means nothing useful.
    """
    entries = surface.entries if before is None else surface.entries[:before]
    kept = 0
    cut = len(entries)
    while cut > 0 and kept + entries[cut - 1].tokens <= keep_recent_tokens:
        kept += entries[cut - 1].tokens
        cut -= 1
    if cut == 0:
        last_user = max(
            (i for i, e in enumerate(entries) if e.role == "user" and not e.checkpoint),
            default=0,
        )
        cut = last_user
    # Move the cut back until the prefix pairs every call with its result.
    while cut > 0 and not _balanced(entries[:cut]):
        cut -= 1
    chosen = entries[:cut]
    return span_of(chosen) if _useful(chosen) else None


def range_span(surface: Surface, first_seq: int, last_seq: int) -> Span | None:
    """An explicit seq range, as the entries of the surface that fall in it."""
    chosen = [e for e in surface.entries if first_seq <= e.seq <= last_seq]
    if not chosen:
        return None
    return span_of(chosen)


def span_problem(surface: Surface, span: Span) -> str | None:
    """Why a span cannot be compacted now (None: it can).

    Present, contiguous and in order on the surface, equally priced, and
    balanced: the checks selected-span stability is made of.
    """
    positions = {entry.seq: i for i, entry in enumerate(surface.entries)}
    if any(seq not in positions for seq in span.seqs):
        return "a selected message is no longer on the surface"
    indexes = [positions[seq] for seq in span.seqs]
    if indexes != list(range(indexes[0], indexes[0] + len(indexes))):
        return "the selected messages are no longer contiguous and in order"
    entries = surface.entries[indexes[0] : indexes[-1] + 1]
    if sum(e.tokens for e in entries) != span.tokens:
        return "the selected messages changed size"
    if not _balanced(entries):
        return "the selection would split a tool call from its result"
    return None
