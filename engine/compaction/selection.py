"""Choosing what to compact, and checking it is still there afterwards.

A span is a run of surface entries named by their log seqs. It never splits
a tool call from its result, and it leaves the most recent context (up to
`keep_recent_tokens`) on the surface. Stability comes in the two forms the
transaction needs: the selected span alone, or the whole surface.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from itertools import islice
from typing import TypeVar

from msgspec import Struct

from engine.surface import Entry, Surface
from engine.util.offload import run_drained

T = TypeVar("T")


class Span(Struct, frozen=True):
    """A run of surface entries: its first and last seq, how many, and their price.

    `index` is where the run stood and `reshapes` the surface's reshape count
    when it was found to be one balanced run (None: not checked). The surface
    only appends between reshapes, so while `reshapes` holds the run is still
    there, same entries at the same index: stability is one compare. `newest`
    is the surface's highest seq when the span was taken: an entry in the run
    with a higher one took the place of something selected.
    """

    first: int
    last: int
    count: int
    tokens: int
    index: int
    newest: int
    reshapes: int | None = None

    def entries(self, surface: Surface) -> list[Entry]:
        """The span's entries, in surface order (call once it is known to be stable)."""
        return surface.entries[self.index : self.index + self.count]


class View(Struct, frozen=True):
    """What selection reads of a surface, taken on the loop in constant time, so the
    passes over a long thread can run in a worker thread.

    `entries` is the surface's own list, read only below `count`: the surface
    only appends to it between reshapes, so that prefix stays as it was while
    `reshapes` holds (a copy would touch every entry on the loop). A span
    chosen from a view carries the view's reshape
    count, and `offloaded` chooses again on the loop if a checkpoint
    reshaped the surface meanwhile.
    """

    entries: Sequence[Entry]
    count: int
    tokens: int
    newest: int
    reshapes: int

    @classmethod
    def of(cls, surface: Surface | View) -> View:
        if isinstance(surface, View):
            return surface
        entries = surface.entries
        return cls(entries, len(entries), surface.tokens, surface.newest, surface.reshapes)


async def offloaded(surface: Surface, choose: Callable[[View], T]) -> T:
    """`choose` over a view of the surface, in a worker thread.

    On a long thread selection is Python over every entry that the UI loop
    would otherwise spend on each compaction. Should a
    checkpoint reshape the surface meanwhile (a range compaction committing),
    what the worker read may be torn, so the choice is made again, here.
    """
    view = View.of(surface)
    try:
        chosen = await run_drained(choose, view)
    except (IndexError, StopIteration):
        if surface.reshapes == view.reshapes:
            raise
    else:
        if surface.reshapes == view.reshapes:
            return chosen
    return choose(View.of(surface))


async def select_offloaded(
    surface: Surface, keep_recent_tokens: int, *, before: int | None = None
) -> Span | None:
    """`select_range`, its passes in a worker thread (see `offloaded`)."""
    choose = partial(select_range, keep_recent_tokens=keep_recent_tokens, before=before)
    return await offloaded(surface, choose)


def _balanced(entries: Sequence[Entry]) -> bool:
    calls = {call for entry in entries for call in entry.call_ids}
    results = {entry.result_of for entry in entries if entry.result_of}
    return calls == results


def _balanced_cuts(entries: Sequence[Entry], cut: int) -> int:
    """The longest prefix up to `cut` that pairs every call with its result, in one pass.

    `open` counts the ids seen on one side only (a call without its result, or
    a result without its call); a prefix is balanced where it is zero.
    """
    calls: set[str] = set()
    results: set[str] = set()
    open_ids = 0
    best = 0
    for i in range(cut):
        entry = entries[i]
        if not (entry.call_ids or entry.result_of):
            if open_ids == 0:
                best = i + 1
            continue
        for call in entry.call_ids:
            if call not in calls:
                calls.add(call)
                open_ids += -1 if call in results else 1
        result = entry.result_of
        if result and result not in results:
            results.add(result)
            open_ids += -1 if result in calls else 1
        if open_ids == 0:
            best = i + 1
    return best


def _useful(entries: Sequence[Entry], cut: int) -> bool:
    """Worth a model call: more than one entry, or one that is not already a summary."""
    return cut > 1 or (cut == 1 and not entries[0].checkpoint)


def open_turn_start(surface: Surface | View, turn: int) -> int | None:
    """The surface index of the open turn's own prompt (None: it has none there)."""
    view = View.of(surface)
    return next(
        (
            i
            for i, e in enumerate(islice(view.entries, view.count))
            if e.turn == turn and e.role == "user" and not e.checkpoint
        ),
        None,
    )


def select_range(
    surface: Surface | View, keep_recent_tokens: int, *, before: int | None = None
) -> Span | None:
    """The longest balanced prefix that leaves the recent context alone.

    When the recent-context budget would keep everything, the last user
    exchange is kept instead, so an explicit /compact always has work to
    do once there is more than one exchange. `before` bounds the prefix to
    the entries ahead of that index (automatic compaction passes the open
    turn's prompt, which the request is answering). None means nothing useful.
    """
    view = View.of(surface)
    entries, count = view.entries, view.count
    end = count if before is None else min(before, count)
    kept = 0
    cut = end
    while cut > 0 and kept + entries[cut - 1].tokens <= keep_recent_tokens:
        kept += entries[cut - 1].tokens
        cut -= 1
    if cut == 0:
        last_user = max(
            (i for i in range(end) if entries[i].role == "user" and not entries[i].checkpoint),
            default=0,
        )
        cut = last_user
    # Move the cut back until the prefix pairs every call with its result.
    cut = _balanced_cuts(entries, cut)
    if not _useful(entries, cut):
        return None
    # The running total less what stays: a pass over the recent part only.
    tokens = view.tokens - sum(e.tokens for e in islice(entries, cut, count))
    return Span(entries[0].seq, entries[cut - 1].seq, cut, tokens, 0, view.newest, view.reshapes)


def range_span(surface: Surface, first_seq: int, last_seq: int) -> Span | None:
    """An explicit seq range, as the entries of the surface that fall in it.

    Not checked here: the transaction says why it cannot be compacted, if so.
    """
    found = [(i, e) for i, e in enumerate(surface.entries) if first_seq <= e.seq <= last_seq]
    if not found:
        return None
    first, last = found[0][1].seq, found[-1][1].seq
    tokens = sum(e.tokens for _, e in found)
    return Span(first, last, len(found), tokens, found[0][0], surface.newest)


def span_problem(surface: Surface, span: Span) -> str | None:
    """Why a span cannot be compacted now (None: it can).

    Present, contiguous and in order on the surface, equally priced, and
    balanced: the checks selected-span stability is made of. A span checked
    at the surface's current reshape count needs none of them again.
    """
    if span.reshapes is not None and span.reshapes == surface.reshapes:
        return None
    entries = surface.entries
    index = next((i for i, e in enumerate(entries) if e.seq == span.first), None)
    if index is None or all(e.seq != span.last for e in entries[index:]):
        return "a selected message is no longer on the surface"
    run = entries[index : index + span.count]
    if any(e.seq > span.newest for e in run):
        return "a selected message is no longer on the surface"  # a checkpoint took its place
    # Seqs are unique: a run of `count` from the first ends at the last only if
    # nothing was removed from it or slipped into it.
    if len(run) != span.count or run[-1].seq != span.last:
        return "the selected messages are no longer contiguous and in order"
    if sum(e.tokens for e in run) != span.tokens:
        return "the selected messages changed size"
    if not _balanced(run):
        return "the selection would split a tool call from its result"
    return None


def checked(surface: Surface, span: Span) -> Span:
    """The span as found valid on the surface now: its index and the reshape count."""
    if span.reshapes == surface.reshapes:
        return span
    index = next(i for i, e in enumerate(surface.entries) if e.seq == span.first)
    return Span(
        span.first, span.last, span.count, span.tokens, index, span.newest, surface.reshapes
    )
