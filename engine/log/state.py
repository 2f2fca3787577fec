"""What a thread's line amounts to at its end, beside the conversation: kept by replay.

Resume needs more than the open brackets (`TailState`): the prompts still queued,
the draft, the archive references and the notes. Each is a fold over the line's
events, kept here as the log appends and written down in the resume index
(engine.log.resume), so a long thread opens without reading its events again:

- `pending`: the inbox items queued and never taken, by id (what the driver restores): an
  `inbox/queued` line's, or one a rewind queues (an undone retry's, an /edit's);
- `draft`: the newest `prompt/draft`'s text, and `drafts`, the seqs of the line's drafts;
- `records`: the events the archive scan and the notebook read, in order (every
  checkpoint, with its text left out, every `compact/end`, `compact/archived`,
  `session/fork`, `note/set` and `note/delete`): what `scan_history` and
  `notebook_at` give over all the line's events, they give over these;
- `hidden`: the seqs of injected context (`source: "inject"`).

`tail` (the open brackets, the seam's facts, the system prompt) and `pending` are folds
of the file's events in file order: a rewind clears what was open and queues what it
carries, so whatever line it goes to they come out as a replay of that line would
leave them, and the seam's facts are the lifecycle's, as the system prompt is the
thread's. The rest follow the line: a rewind changes them by what it takes off the line
and puts on it (`follow`, engine.log.change), or they are folded again from the start.

`FileFacts` are the file's, whatever line it is on: the rewinds, the highest turn,
whether it holds anything the user typed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from engine.events import (
    AssistantMessage,
    CompactArchived,
    CompactEnd,
    InboxEdited,
    InboxQueued,
    InboxRemoved,
    InboxRestored,
    KnownEvent,
    LogEvent,
    NoteDelete,
    NoteSet,
    PromptDraft,
    SessionFork,
    SessionRewind,
    SessionTitle,
    ToolResult,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.log.brackets import BRACKETS, TailState
from engine.log.change import LineChange


class LineState(Struct, gc=False):
    """The folds of a line's events (see the module docstring)."""

    tail: TailState = field(default_factory=TailState)
    pending: dict[int, str] = field(default_factory=dict)
    draft: str = ""
    records: list[KnownEvent] = field(default_factory=list)
    hidden: list[int] = field(default_factory=list)
    drafts: list[int] | None = None
    """The seqs of the line's `prompt/draft` lines, oldest first: a rewind past the newest
    finds the one before (`follow`). None: not known (a resume index written before they
    were kept), and such a rewind folds the line again."""

    def apply(self, event: LogEvent) -> None:
        """One event appended to the line."""
        kind = type(event)
        if kind in BRACKETS:
            self.tail.apply(event)
        if kind is UserMessage:
            self._user(event)  # type: ignore[arg-type]
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event)

    def replay(self, events: Iterable[LogEvent], facts: FileFacts | None = None) -> None:
        """Every event of a line, in order (with `facts`, the line is the whole file: the
        file's facts are gathered in the same pass). Replies, tool results, turn markers,
        prompts and their queueing, most of a thread, are dealt with on locals."""
        tail = self.tail
        apply_bracket = tail.apply
        user = self._user
        handler_of = _HANDLERS.get
        brackets = BRACKETS
        plain = _PLAIN
        pending = self.pending
        open_turn, last_turn = tail.open_turn, tail.last_turn
        typed = False
        title: str | None = None
        rewinds: list[tuple[int, int]] = []
        for event in events:
            kind = type(event)
            if kind in plain:
                continue
            if kind is UserMessage:
                typed = True
                item = event.item_id  # type: ignore[union-attr]
                if item is not None:
                    pending.pop(item, None)
                # A checkpoint or injected context is kept; a plain prompt is not.
                if event.checkpoint is not None or event.source:  # type: ignore[union-attr]
                    user(event)  # type: ignore[arg-type]
            elif kind is TurnStart:
                open_turn = event  # type: ignore[assignment]
                if open_turn.turn > last_turn:  # type: ignore[union-attr]
                    last_turn = open_turn.turn  # type: ignore[union-attr]
            elif kind is TurnEnd:
                if open_turn is not None and open_turn.turn == event.turn:  # type: ignore[union-attr]
                    open_turn = None
            elif kind is InboxQueued:
                typed = True
                pending[event.seq] = event.text  # type: ignore[union-attr]
            else:
                if kind in brackets:
                    tail.open_turn, tail.last_turn = open_turn, last_turn
                    apply_bracket(event)
                    open_turn, last_turn = tail.open_turn, tail.last_turn
                    if kind is SessionRewind and 0 <= event.after < event.seq:  # type: ignore[union-attr]
                        rewinds.append((event.seq, event.after))  # type: ignore[union-attr]
                elif kind is PromptDraft and event.text:  # type: ignore[union-attr]
                    typed = True
                elif kind is SessionTitle:
                    title = " ".join(event.title.split())  # type: ignore[union-attr]
                handler = handler_of(kind)
                if handler is not None:
                    handler(self, event)
        tail.open_turn, tail.last_turn = open_turn, last_turn
        if facts is not None:
            facts.top_turn = max(facts.top_turn, last_turn)
            facts.typed = facts.typed or typed
            facts.rewinds.extend(rewinds)
            if title is not None:
                facts.title = title

    def _user(self, event: UserMessage) -> None:
        if event.item_id is not None:
            self.pending.pop(event.item_id, None)
        if event.checkpoint is not None:
            self.records.append(replace(event, text=""))
        elif event.source == "inject":
            self.hidden.append(event.seq)

    def _queued(self, event: InboxQueued) -> None:
        self.pending[event.seq] = event.text

    def _edited(self, event: InboxEdited) -> None:
        if event.item_id in self.pending:
            self.pending[event.item_id] = event.text

    def _removed(self, event: InboxRemoved) -> None:
        self.pending.pop(event.item_id, None)

    def _restored(self, event: InboxRestored) -> None:
        self.pending[event.item_id] = event.text

    def _draft(self, event: PromptDraft) -> None:
        self.draft = event.text
        if self.drafts is not None:
            self.drafts.append(event.seq)

    def _record(self, event: KnownEvent) -> None:
        self.records.append(event)

    def _rewind(self, event: SessionRewind) -> None:
        # Refused while anything waits; what was queued at the branch point was taken
        # by a turn of the abandoned branch, and goes with it. An undone retry queues
        # again what its branch had (engine.threads.retry); an /edit's queues the prompt
        # sent in place of the one rewound to, with this line's seq as its id.
        self.pending.clear()
        for again in event.queued:
            self.pending[again.item_id] = again.text
        if event.resend is not None:
            self.pending[event.seq] = event.resend

    def follow(self, change: LineChange, file: Sequence[LogEvent]) -> bool:
        """A rewind moved the thread by `change`: the folds that follow the line go back to
        its `ancestor` and take in what it `added`. False (nothing changed): the draft
        before a dropped one is not known (`drafts`); fold the line again instead."""
        ancestor = change.ancestor
        dropped_draft = any(type(event) is PromptDraft for event in change.dropped)
        drafts = self.drafts
        if dropped_draft and drafts is None:
            return False
        _cut(self.records, ancestor, lambda event: event.seq)
        _cut(self.hidden, ancestor, lambda seq: seq)
        if drafts is not None:
            _cut(drafts, ancestor, lambda seq: seq)
        if dropped_draft:
            assert drafts is not None
            newest = file[drafts[-1] - 1] if drafts else None
            self.draft = newest.text if type(newest) is PromptDraft else ""
        for event in change.added:
            kind = type(event)
            if kind is UserMessage:
                message: UserMessage = event  # type: ignore[assignment]
                if message.checkpoint is not None:
                    self.records.append(replace(message, text=""))
                elif message.source == "inject":
                    self.hidden.append(message.seq)
            elif kind is PromptDraft:
                self._draft(event)  # type: ignore[arg-type]
            elif _HANDLERS.get(kind) is LineState._record:
                self._record(event)  # type: ignore[arg-type]
        return True


def _cut(items: list[Any], seq: int, seq_of: Callable[[Any], int]) -> None:
    """Drop the items of seq above `seq` (a list in line order: they are its end)."""
    while items and seq_of(items[-1]) > seq:
        items.pop()


_HANDLERS: dict[type, Callable[[LineState, Any], None]] = {
    InboxQueued: LineState._queued,
    InboxEdited: LineState._edited,
    InboxRemoved: LineState._removed,
    InboxRestored: LineState._restored,
    PromptDraft: LineState._draft,
    CompactEnd: LineState._record,
    CompactArchived: LineState._record,
    SessionFork: LineState._record,
    NoteSet: LineState._record,
    NoteDelete: LineState._record,
    SessionRewind: LineState._rewind,
}


_PLAIN = frozenset({AssistantMessage, ToolResult})


class FileFacts(Struct, gc=False):
    """What the whole file says, whatever line the thread is on."""

    top_turn: int = 0
    """The highest turn number in the file (a new turn is numbered past every branch's)."""
    typed: bool = False
    """Anything the user typed: a prompt, sent or queued, or a draft with text."""
    rewinds: list[tuple[int, int]] = field(default_factory=list)
    """(seq, after) of every rewind that names an earlier event, in seq order."""
    title: str = ""
    """The newest `/rename` title on one line ("" when none), whatever the line."""

    def apply(self, event: LogEvent) -> None:
        kind = type(event)
        if kind is SessionTitle:
            self.title = " ".join(event.title.split())  # type: ignore[union-attr]
        elif kind is TurnStart:
            self.top_turn = max(self.top_turn, event.turn)  # type: ignore[union-attr]
        elif kind is UserMessage or kind is InboxQueued:
            self.typed = True
        elif kind is PromptDraft:
            self.typed = self.typed or bool(event.text)  # type: ignore[union-attr]
        elif kind is SessionRewind and 0 <= event.after < event.seq:  # type: ignore[union-attr]
            self.rewinds.append((event.seq, event.after))  # type: ignore[union-attr]
