"""The surface: the model-facing history, derived from the log by replay.

A pure function of the events, kept incrementally so a long thread is replayed
once. Compaction is positional: the checkpoint takes the place of the span it
replaces, so context appended while the summary was being written (an injection)
stays after the checkpoint even though its seq is lower than the checkpoint's.

A thread opened from its resume index gets its surface from there (`for_log`,
engine.surface.kept): its figures at once, its entries when first used (`loaded`
reads them off the loop), so an open does not pay for a long surface.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from engine.events import (
    AssistantMessage,
    Checkpoint,
    CompactSummary,
    EndSeed,
    LogEvent,
    ToolResult,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.log import paused_gc
from engine.log.change import LineChange
from engine.surface.entry import (
    ENTRY_BUILDERS,
    Entry,
    Message,
    assistant_entry,
    estimate_tokens,
    tokens_for_chars,
    tool_entry,
    user_entry,
)
from engine.util.tool_cut import TOOL_RESULT_CONTEXT_CHARS, cut_for_context

__all__ = ["Entry", "Message", "Surface", "estimate_tokens", "tokens_for_chars"]


class Pending(Protocol):
    """Entries a surface holds elsewhere until first used (engine.surface.kept)."""

    def read(self, surface: Surface) -> None:
        """Give `surface` its entries (blocking; once: later calls return at once)."""

    def defer(self, surface: Surface, event: LogEvent) -> bool:
        """Apply `event` without the entries if it can be (False: read them first)."""

    def cut(self, surface: Surface, seqs: list[int], added: int) -> bool:
        """A rewind: drop the newest entries, of `seqs` (in order), without reading them, if
        it can be (False: nothing changed); the `added` events of the new line before the
        rewind come next (through `apply`), then the rewind itself."""


INTERRUPTED_RESULT = "error: no result was recorded for this call (the turn was interrupted)"


class Surface:
    """Entries in model order, updated one event at a time."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._pending: Pending | None = None
        """Where entries kept in a resume index come from, until they are read."""
        self._replacements: dict[int, list[int]] = {}
        self._turn: int | None = None
        self.version = 0
        """Bumped by every change to the entries: whole-surface stability is one compare."""
        self.reshapes = 0
        """Bumped by every change other than an append: a span valid at one `reshapes`
        keeps its entries at the same index while it holds."""
        self.tokens = 0
        """The running total of the entries' token estimates."""
        self.newest = 0
        """The highest seq that has been on the surface (a withdrawn prompt's included):
        whatever arrives later (an append, a checkpoint) has a higher one."""
        self._vouched: tuple[int, int, int, int, int] | None = None

    @property
    def entries(self) -> list[Entry]:
        """The entries in model order (kept ones read first, blocking: see `loaded`)."""
        if self._pending is not None:
            self._pending.read(self)
        return self._entries

    @entries.setter
    def entries(self, value: list[Entry]) -> None:
        self._entries = value

    @property
    def deferred(self) -> bool:
        """Its entries are still in the resume index (its figures are not)."""
        return self._pending is not None

    async def loaded(self) -> None:
        """Read the entries kept in the resume index, if they are not yet, off the loop.

        A read only: a caller cancelled meanwhile returns at once, and the read ends
        on its own (whoever needs the entries next waits for it)."""
        if self._pending is not None:
            await asyncio.to_thread(self._pending.read, self)

    def _add(self, entry: Entry) -> None:
        self.entries.append(entry)
        self.tokens += entry.tokens
        self.newest = entry.seq
        self.version += 1

    @classmethod
    def from_events(cls, events: Iterable[LogEvent]) -> Surface:
        """Replay: what `apply` of every event gives, with plain messages and turn
        markers handled in locals (this loop is the hot path of a resume)."""
        surface = cls()
        entries = surface.entries
        add = entries.append
        tokens = 0
        added = 0
        turn: int | None = None
        builder_of = ENTRY_BUILDERS.get
        handler_of = _HANDLERS.get
        with paused_gc():
            for event in events:
                kind = type(event)
                build = builder_of(kind)
                if build is not None and (kind is not UserMessage or event.checkpoint is None):  # type: ignore[union-attr]
                    entry = build(event, turn)
                    if entry is not None:
                        add(entry)
                        tokens += entry.tokens
                        added += 1
                elif kind is TurnStart:
                    turn = event.turn  # type: ignore[union-attr]
                elif kind is EndSeed or (kind is TurnEnd and not event.withdrawn):  # type: ignore[union-attr]
                    turn = None
                else:
                    handler = handler_of(kind)
                    if handler is None:
                        continue
                    surface._sync(tokens, added, turn)
                    handler(surface, event)
                    entries = surface.entries  # a checkpoint may have rebuilt the list
                    add = entries.append
                    tokens, added, turn = surface.tokens, 0, surface._turn
            surface._sync(tokens, added, turn)
        return surface

    def rebuild(self, events: Iterable[LogEvent]) -> None:
        """Become the surface of other events (a rewind's line), in place: the driver,
        the compaction and the continuity tools all hold this object.

        `version` and `reshapes` only ever grow, so a span vouched for or a
        stability check taken before the rewind can never pass after it.
        """
        fresh = Surface.from_events(events)
        version, reshapes = self.version, self.reshapes
        vars(self).update(vars(fresh))
        self.version = version + fresh.version + 1
        self.reshapes = reshapes + 1
        self._vouched = None

    def follow(self, change: LineChange | None, line: Iterable[LogEvent]) -> None:
        """A rewind moved the thread to another line (`line`, its events): take back what
        it cut off and apply what it put on (engine.log.change), so /retry, /edit and an
        undone retry cost the last exchange, not the thread, even with the entries still
        in the resume index. Rebuilt from `line` instead when the change is not known,
        or what was cut off did more than append (a compaction's checkpoint, a
        withdrawal)."""
        if change is None or not self._shift(change):
            self.rebuild(line)

    def _shift(self, change: LineChange) -> bool:
        removed: list[Entry] = []
        turns = False
        for event in change.dropped:
            kind = type(event)
            if kind is UserMessage and event.checkpoint is not None:  # type: ignore[union-attr]
                return False
            if kind is TurnEnd and event.withdrawn:  # type: ignore[union-attr]
                return False
            build = ENTRY_BUILDERS.get(kind)
            if build is not None:
                entry = build(event, None)
                if entry is not None:
                    removed.append(entry)
            turns = turns or kind is TurnStart or kind is TurnEnd or kind is EndSeed
        back = _looking_back(change, turns=turns, newest=bool(removed))
        if back is None:
            return False
        seqs = [entry.seq for entry in removed]
        pending = self._pending
        if pending is not None:
            if not pending.cut(self, seqs, len(change.added)):
                return False
        elif seqs:
            entries = self._entries
            if [entry.seq for entry in entries[len(entries) - len(seqs) :]] != seqs:
                return False
            del entries[len(entries) - len(seqs) :]
        if seqs:
            self.tokens -= sum([entry.tokens for entry in removed])
        turn, newest = back
        if turns:
            self._turn = turn
        if seqs:
            self.newest = newest
        ancestor = change.ancestor
        if any(summary > ancestor for summary in self._replacements):
            self._replacements = {s: r for s, r in self._replacements.items() if s <= ancestor}
        self._vouched = None
        self.version += 1
        self.reshapes += 1
        for event in change.added:
            self.apply(event)
        return True

    def _sync(self, tokens: int, added: int, turn: int | None) -> None:
        """Hand `from_events`' locals back: `added` entries were appended since the last sync."""
        self.tokens = tokens
        self._turn = turn
        if added:
            self.version += added
            self.newest = self.entries[-1].seq

    def apply(self, event: LogEvent) -> None:
        pending = self._pending
        if pending is not None:
            if pending.defer(self, event):
                return
            pending.read(self)
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def _user(self, event: UserMessage) -> None:
        entry = user_entry(event, self._turn)
        if event.checkpoint is not None:
            self._place_checkpoint(entry, event.checkpoint)
        else:
            self._add(entry)

    def _assistant(self, event: AssistantMessage) -> None:
        entry = assistant_entry(event, self._turn)
        if entry is not None:
            self._add(entry)

    def _tool(self, event: ToolResult) -> None:
        self._add(tool_entry(event, self._turn))

    def _turn_start(self, event: TurnStart) -> None:
        self._turn = event.turn

    def _turn_end(self, event: TurnEnd) -> None:
        self._turn = None
        if event.withdrawn:
            self._withdraw(event.withdrawn)

    def _seam(self, event: EndSeed) -> None:
        self._turn = None

    def _withdraw(self, seqs: tuple[int, ...]) -> None:
        """Drop the prompts a failed turn withdrew (`turn/end` `withdrawn`): the model never
        answered them, and the front end gives them back to be sent again.

        They are the newest plain entries, so the search runs back from the end to the
        first plain entry older than all of them (a checkpoint placed meanwhile has a
        higher seq and is stepped over). A reshape, like a checkpoint.
        """
        wanted = set(seqs)
        oldest = min(wanted)
        entries = self.entries
        removed = tokens = 0
        at = len(entries) - 1
        while at >= 0 and wanted:
            entry = entries[at]
            if entry.seq in wanted and entry.role == "user" and not entry.checkpoint:
                wanted.discard(entry.seq)
                removed += 1
                tokens += entry.tokens
                del entries[at]
            elif entry.seq < oldest and not entry.checkpoint:
                break
            at -= 1
        if removed:
            self.tokens -= tokens
            self.version += 1
            self.reshapes += 1

    def _summary(self, event: CompactSummary) -> None:
        self._replacements[event.seq] = list(event.replaced or ())

    def vouch(self, summary: int, index: int, count: int, tokens: int) -> None:
        """The checkpoint of summary seq `summary` replaces exactly `entries[index:index +
        count]`, priced `tokens`.

        The region transaction says so when it has just checked the span at this
        version, so placing that checkpoint skips comparing every replaced entry on
        the UI loop. Any change to the surface, or any other checkpoint, voids it.
        """
        self._vouched = (summary, self.version, index, count, tokens)

    def _vouched_run(self, summary: int, replaced: list[int]) -> tuple[int, int] | None:
        """(index, tokens) of the vouched run, if it still is the one `replaced` names."""
        vouched, self._vouched = self._vouched, None
        if vouched is None or not replaced:
            return None
        seq, version, index, count, tokens = vouched
        entries = self.entries
        if (
            seq != summary
            or version != self.version
            or count != len(replaced)
            or index + count > len(entries)
            or entries[index].seq != replaced[0]
            or entries[index + count - 1].seq != replaced[-1]
        ):
            return None
        return index, tokens

    def _place_checkpoint(self, entry: Entry, checkpoint: Checkpoint) -> None:
        summary = checkpoint.summary or 0
        replaced = self._replacements.pop(summary, None) or []
        entries = self.entries
        vouched = self._vouched_run(summary, replaced)
        if vouched is not None:
            at, removed_tokens = vouched
            entries[at : at + len(replaced)] = [entry]
            self._placed(entry, removed_tokens)
            return
        index = self._find(replaced)
        if index is not None:
            # The usual case: the span is still one contiguous run in surface order.
            removed = entries[index : index + len(replaced)]
            entries[index : index + len(replaced)] = [entry]
        else:
            wanted = set(replaced)
            removed = [current for current in entries if current.seq in wanted]
            kept = [current for current in entries if current.seq not in wanted]
            position = next(
                (i for i, current in enumerate(entries) if current.seq in wanted), len(entries)
            )
            kept.insert(position, entry)  # nothing replaced stands before `position`
            self.entries = kept
        self._placed(entry, sum([e.tokens for e in removed]))

    def _placed(self, entry: Entry, removed_tokens: int) -> None:
        self.tokens += entry.tokens - removed_tokens
        self.newest = entry.seq
        self.version += 1
        self.reshapes += 1

    def _find(self, replaced: list[int]) -> int | None:
        """Where the replaced seqs stand as one run, in order (None: they do not)."""
        if not replaced:
            return None
        first = replaced[0]
        entries = self.entries
        index = next((i for i, e in enumerate(entries) if e.seq == first), None)
        if index is None or len(entries) - index < len(replaced):
            return None
        if [e.seq for e in entries[index : index + len(replaced)]] != replaced:
            return None
        return index

    def messages(self) -> list[Message]:
        """The chat messages to send, every tool call followed by its result.

        Results are placed right after their call even when other context
        (an injection) landed between them in the log; a call whose result
        never reached the log (a crash or cancel) gets a synthetic error
        result so the request stays valid. Orphan results are dropped.
        """
        results = {e.result_of: _in_context(e) for e in self.entries if e.role == "tool"}
        out: list[Message] = []
        for entry in self.entries:
            if entry.role == "tool":
                continue
            out.append(entry.message)
            for call_id in entry.call_ids:
                out.append(
                    results.get(call_id)
                    or {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_RESULT}
                )
        return out


LOOK_BACK = 256
"""Events a rewind's surface looks back through, from where the lines meet, for the turn
then open and the newest message; not found within them, it is rebuilt."""


def _looking_back(
    change: LineChange, *, turns: bool, newest: bool
) -> tuple[int | None, int] | None:
    """(the turn open, the seq of the newest message) on the line where the lines meet,
    as far as asked; None: not found within `LOOK_BACK` events."""
    turn: int | None = None
    seq = 0
    for looked, event in enumerate(change.earlier()):
        if not turns and not newest:
            return turn, seq
        if looked >= LOOK_BACK:
            return None
        kind = type(event)
        if turns and (kind is TurnStart or kind is TurnEnd or kind is EndSeed):
            turn = event.turn if kind is TurnStart else None  # type: ignore[union-attr]
            turns = False
        if newest and (kind is UserMessage or kind is ToolResult or _says(event)):
            seq = event.seq
            newest = False
    return turn, seq


def _says(event: LogEvent) -> bool:
    """A reply with something on the surface: text or calls (a thinking-only one has not)."""
    return isinstance(event, AssistantMessage) and bool(event.content or event.tool_calls)


# One lookup per event instead of a chain of isinstance checks, on replay's hot path.
_HANDLERS: dict[type, Callable[[Surface, Any], None]] = {
    UserMessage: Surface._user,
    AssistantMessage: Surface._assistant,
    ToolResult: Surface._tool,
    TurnStart: Surface._turn_start,
    TurnEnd: Surface._turn_end,
    EndSeed: Surface._seam,
    CompactSummary: Surface._summary,
}


def _in_context(entry: Entry) -> Message:
    """A tool result as a request carries it: a long one cut, with a note (util.tool_cut)."""
    message = entry.message
    content = message.get("content")
    if not isinstance(content, str) or len(content) <= TOOL_RESULT_CONTEXT_CHARS:
        return message
    return {**message, "content": cut_for_context(entry.seq, content)}
