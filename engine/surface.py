"""The surface: the model-facing history, derived from the log by replay.

A pure function of the events (no I/O), kept incrementally so a long thread
is replayed once. Compaction is positional: the checkpoint takes the place
of the span it replaces, so context appended while the summary was being
written (an injection) stays after the checkpoint even though its seq is
lower than the checkpoint's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

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

Message = dict[str, Any]

INTERRUPTED_RESULT = "error: no result was recorded for this call (the turn was interrupted)"


def estimate_tokens(text: str) -> int:
    """A cheap, stable estimate (about four characters a token).

    Compaction compares and prices spans with it, so it must depend only on
    the text, never on a tokenizer that could change between runs.
    """
    return tokens_for_chars(len(text))


def tokens_for_chars(chars: int) -> int:
    return (chars + 3) // 4 + 4


class Entry(msgspec.Struct, gc=False, eq=False):
    """One message on the surface: its log seq, role and price, and the event it came from.

    The chat message is built only when a request (or the archive) asks for it,
    then cached: replay would otherwise build a dict per past message. Immutable
    but for that cache. A Struct, cheaper to build than a dataclass, and kept out of
    the cycle collector (it holds events and strings only).
    """

    seq: int
    role: str
    event: UserMessage | AssistantMessage | ToolResult
    tokens: int
    checkpoint: bool = False
    turn: int | None = None
    call_ids: tuple[str, ...] = ()
    result_of: str | None = None
    _message: Message | None = None

    def __eq__(self, other: object) -> bool:
        """Equal entries stand for the same message; the cache does not count."""
        if not isinstance(other, Entry):
            return NotImplemented
        return (
            self.seq == other.seq
            and self.role == other.role
            and self.event == other.event
            and self.tokens == other.tokens
            and self.checkpoint == other.checkpoint
            and self.turn == other.turn
            and self.call_ids == other.call_ids
            and self.result_of == other.result_of
        )

    @property
    def message(self) -> Message:
        """The chat message for a request, built on first use."""
        message = self._message
        if message is None:
            message = self._message = _message_of(self.event)
        return message


def _message_of(event: UserMessage | AssistantMessage | ToolResult) -> Message:
    if isinstance(event, UserMessage):
        return {"role": "user", "content": event.text}
    if isinstance(event, ToolResult):
        return {"role": "tool", "tool_call_id": event.call_id, "content": event.content}
    return _assistant_message(event)


def _assistant_message(event: AssistantMessage) -> Message:
    message: Message = {"role": "assistant", "content": event.content or ""}
    if event.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments or "{}"},
            }
            for call in event.tool_calls
        ]
    return message


class Surface:
    """Entries in model order, updated one event at a time."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
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
        builder_of = _ENTRY_BUILDERS.get
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

    def _sync(self, tokens: int, added: int, turn: int | None) -> None:
        """Hand `from_events`' locals back: `added` entries were appended since the last sync."""
        self.tokens = tokens
        self._turn = turn
        if added:
            self.version += added
            self.newest = self.entries[-1].seq

    def apply(self, event: LogEvent) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def _user(self, event: UserMessage) -> None:
        entry = _user_entry(event, self._turn)
        if event.checkpoint is not None:
            self._place_checkpoint(entry, event.checkpoint)
        else:
            self._add(entry)

    def _assistant(self, event: AssistantMessage) -> None:
        entry = _assistant_entry(event, self._turn)
        if entry is not None:
            self._add(entry)

    def _tool(self, event: ToolResult) -> None:
        self._add(_tool_entry(event, self._turn))

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
        results = {e.result_of: e.message for e in self.entries if e.role == "tool"}
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


# The builders inline `tokens_for_chars` and pass every field at once: replay builds
# one entry per message.


def _user_entry(event: UserMessage, turn: int | None) -> Entry:
    return Entry(
        event.seq,
        "user",
        event,
        (len(event.text) + 3) // 4 + 4,
        event.checkpoint is not None,
        turn,
    )


def _assistant_entry(event: AssistantMessage, turn: int | None) -> Entry | None:
    """None for a reply with neither text nor calls (one cut off while it was still
    thinking): there is nothing in it to send, and its thinking is never sent."""
    size = len(event.content or "")
    calls = event.tool_calls
    if not calls:
        if not size:
            return None
        return Entry(event.seq, "assistant", event, (size + 3) // 4 + 4, False, turn)
    size += sum([len(c.name) + len(c.arguments or "{}") for c in calls])
    ids = tuple([call.id for call in calls])
    return Entry(event.seq, "assistant", event, (size + 3) // 4 + 4, False, turn, ids)


def _tool_entry(event: ToolResult, turn: int | None) -> Entry:
    tokens = (len(event.content) + 3) // 4 + 4
    return Entry(event.seq, "tool", event, tokens, False, turn, (), event.call_id)


_ENTRY_BUILDERS: dict[type, Callable[[Any, int | None], Entry | None]] = {
    UserMessage: _user_entry,
    AssistantMessage: _assistant_entry,
    ToolResult: _tool_entry,
}
"""The entry of a plain message (a user message without a checkpoint), as `apply` adds it."""

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
