"""Every kind of session-log event, declared once, with its typed payload.

Over 400 lines as one file on purpose: it is the log's contract, every kind side by side.

A line of the log is one of these Structs, tagged by its `kind` (the JSON
field, spelled as on disk). Decoding a line validates the types of every
field a reader uses, so the readers (surface, driver, tail, continuity,
front ends) use attributes and trust them; a line of the wrong shape is one
`file:line` error at load (see `engine.log`), never a TypeError in a reader.

Compatibility rules, because logs outlive the code that wrote them:

- unknown fields are ignored, never an error (a newer writer may add some);
- a kind this code does not know loads as `UnknownEvent`, with its fields;
- a field a writer may leave out has a default, and a field equal to its
  default is left out when written (`omit_defaults`), so the lines written
  are the objects written before these types existed. A field that must be
  on the line whatever its value (compact/start's `turn`) has no default.

Construct a payload without `seq`/`ts` (`UserMessage(text="hi")`);
`SessionLog.append` stamps both and returns the stamped event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import msgspec

Archive = Any
"""Loose on purpose: continuity.status makes a malformed one "unavailable", not a load error."""


class Event(msgspec.Struct, tag_field="kind", omit_defaults=True, frozen=True, gc=False):
    """The stamp every event carries; `kind` is the tag of the subclass.

    Untracked by the cycle collector (`gc=False`, inherited by every kind):
    an event is frozen and never holds anything that could refer back to it,
    so it can be in no cycle, and a resumed thread's 100k events would
    otherwise all be traversed by the collections that follow replay.
    """

    seq: int = 0
    ts: str = ""

    @property
    def kind(self) -> str:
        return str(self.__struct_config__.tag)


class ToolCall(msgspec.Struct, omit_defaults=True, frozen=True, gc=False):
    id: str
    name: str
    arguments: str | None = None
    server: str | None = None
    """The MCP server whose tool this calls (engine.mcp); None for Trove's own tools."""


class Usage(msgspec.Struct, omit_defaults=True, frozen=True, gc=False):
    """A reply's token counts, as read back from its line: a Struct, not a dict.

    A 100k-message thread holds 50k of these; as dicts they cost ~11 MB of a
    resume's memory and were slower to decode. The fields are the counters the
    OpenAI-compatible APIs send (DeepSeek's cache counts included), untyped
    (`Any`), so no value an older log holds can make its line unreadable. The
    line itself keeps whatever mapping the provider sent (`usage_as_sent`):
    a key not named here is on disk, just not in memory; nothing reads it.
    """

    prompt_tokens: Any = msgspec.UNSET
    completion_tokens: Any = msgspec.UNSET
    total_tokens: Any = msgspec.UNSET
    prompt_tokens_details: Any = msgspec.UNSET
    completion_tokens_details: Any = msgspec.UNSET
    prompt_cache_hit_tokens: Any = msgspec.UNSET
    prompt_cache_miss_tokens: Any = msgspec.UNSET


def usage_as_sent(usage: Mapping[str, Any] | None) -> Usage | None:
    """The provider's usage for a payload, to be written exactly as it came.

    A payload is never read before `SessionLog.append`, which encodes it as
    given (so the line holds every key, as it always did) and keeps the event
    read back from that line, where `usage` is a `Usage`. Structs are not
    checked on construction, so the mapping rides in the payload until then.
    """
    return cast("Usage | None", usage)


class Checkpoint(msgspec.Struct, omit_defaults=True, frozen=True, gc=False):
    """What a checkpoint message stands for: its summary event and the span it replaces."""

    summary: int | None = None
    start: int | None = None
    first: int | None = None
    last: int | None = None
    count: int | None = None
    forked_from: int | None = None


class SeqSpan(msgspec.Struct, omit_defaults=True, frozen=True, gc=False):
    """The messages a compaction summarizes, by log seq: the first, the last, and how many
    (compact/start's `range`, compact/summary's `span`; older lines have no `count`)."""

    first: int | None = None
    last: int | None = None
    count: int | None = None


class Requeued(msgspec.Struct, omit_defaults=True, frozen=True, gc=False):
    """An inbox item queued again by a rewind (`SessionRewind.queued`), id and text kept."""

    item_id: int
    text: str = ""


# -- the conversation ------------------------------------------------------------------


class UserMessage(Event, tag="user/message", kw_only=True, frozen=True):
    """A user message: typed, injected context (`source="inject"`), steering or a checkpoint."""

    text: str = ""
    checkpoint: Checkpoint | None = None
    item_id: int | None = None
    source: str | None = None
    placement: str | None = None


class AssistantMessage(Event, tag="assistant/message", kw_only=True, frozen=True):
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    """A tuple, as `TurnStart.items`: a replay holds every event, and the empty one (most
    replies) decodes as Python's one shared `()` where a list would be 56 bytes each."""
    usage: Usage | None = None
    model: str | None = None
    """The model id the server said wrote it."""
    model_entry: str | None = None
    """The config's `models:` entry that was in use (None: `model:` itself, or a log
    written before named models: left out of the line, so older logs read the same)."""
    finish_reason: str | None = None
    cancelled: bool = False
    interrupted: bool = False
    reasoning: str | None = None
    """What a reasoning model thought before this reply (`reasoning_content` or
    `reasoning` deltas), kept for people: never sent back to the model, summarized or
    archived (the surface reads only `content` and `tool_calls`). A reply cut off or
    cancelled while thinking keeps the thinking so far (`content` then ""). Left out of
    the line when there was none, so older logs read the same."""
    reasoning_seconds: float | None = None
    """How long it thought: from its first thinking to its first text (or the end)."""

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        return self.tool_calls or ()


class ToolResult(Event, tag="tool/result", kw_only=True, frozen=True):
    call_id: str = ""
    content: str = ""
    name: str | None = None
    server: str | None = None
    """The MCP server whose tool ran (engine.mcp); None for Trove's own tools."""


class TurnStart(Event, tag="turn/start", kw_only=True, frozen=True):
    turn: int
    items: tuple[int, ...] = ()


class TurnEnd(Event, tag="turn/end", kw_only=True, frozen=True):
    turn: int | None = None
    status: str | None = None
    error: str | None = None
    reason: str | None = None
    withdrawn: tuple[int, ...] = ()
    """Seqs of the turn's prompts (its `user/message`s from the inbox) withdrawn from the
    model's history: the turn failed before any reply or tool result, so the model never
    answered them, and a front end gives them back to be sent again. The log keeps them;
    the surface (engine.surface) drops them here, so a prompt sent again is seen once."""


# -- the inbox ------------------------------------------------------------------------


class InboxQueued(Event, tag="inbox/queued", kw_only=True, frozen=True):
    text: str = ""
    waking: bool = False
    placement: str | None = None


class InboxEdited(Event, tag="inbox/edited", kw_only=True, frozen=True):
    item_id: int
    text: str = ""


class InboxRemoved(Event, tag="inbox/removed", kw_only=True, frozen=True):
    item_id: int


class InboxRestored(Event, tag="inbox/restored", kw_only=True, frozen=True):
    """A removed item put back (undo): it is queued again with its id, text and place."""

    item_id: int
    text: str = ""
    placement: str | None = None


# -- compaction ------------------------------------------------------------------------


class CompactStart(Event, tag="compact/start", kw_only=True, frozen=True):
    """The lock: `turn` is the owning turn, or null for a manual compaction."""

    turn: int | None
    range: SeqSpan = SeqSpan()
    seqs: list[int] = []
    tokens: int = 0
    stability: str | None = None
    open_turn: bool = False


class CompactSummary(Event, tag="compact/summary", kw_only=True, frozen=True):
    start: int | None = None
    summary: str = ""
    raw: str | None = None
    usage: Usage | None = None
    model: str | None = None
    span: SeqSpan | None = None
    replaced: list[int] | None = None
    tokens: int | None = None


class CompactEnd(Event, tag="compact/end", kw_only=True, frozen=True):
    """The close; `error` names the failure, `archive` where the originals went."""

    start: int | None = None
    turn: int | None = None
    error: str | None = None
    message: str | None = None
    cancelled: str | None = None
    archive: Archive = msgspec.UNSET
    archive_error: str | None = None


class CompactArchived(Event, tag="compact/archived", kw_only=True, frozen=True):
    """The originals of compaction `start` archived after its bracket closed."""

    start: int
    archive: Archive = msgspec.UNSET
    recovered: bool = False


# -- commands, sessions, notes ------------------------------------------------------------


class CommandRun(Event, tag="command/run", kw_only=True, frozen=True):
    name: str = ""
    args: str = ""


class CommandDone(Event, tag="command/done", kw_only=True, frozen=True):
    name: str = ""
    run: int | None = None
    error: str | None = None
    result: str | None = None


class EndSeed(Event, tag="session/end-seed", kw_only=True, frozen=True):
    """The seam of a resume: whatever was open before it is stale."""

    previous: int | None = None


class SessionFork(Event, tag="session/fork", kw_only=True, frozen=True):
    from_thread: str = ""
    from_seq: int | None = None


class SessionRewind(Event, tag="session/rewind", kw_only=True, frozen=True):
    """The thread goes on after event `after` (0: from the empty start), not after the
    event before this one: the log stays append-only and the abandoned future stays
    in it, on a branch of its own (`engine.log.line`). `prompt` is the turn rewound to."""

    after: int
    prompt: int | None = None
    retry: bool = False
    """`/retry`: the turn after this line answers the prompt at `after` again. Until that
    turn ends whole, the reply it replaces is the thread's: a retry that does not (a
    cancel, a failed stream, a crash) is undone by a rewind back to this line's seq - 1,
    the tip the retry left (`engine.threads.retry`)."""
    undoes: int | None = None
    """The seq of the `/retry` rewind this one undoes (that retry did not end whole)."""
    queued: tuple[Requeued, ...] = ()
    """Prompts that were queued (or steered in) on the branch this rewind leaves, queued
    again here with their ids, in this one line (an undone retry's: nothing typed is lost
    with the branch)."""
    resend: str | None = None
    """`/edit` sent: the prompt typed in place of the one at `prompt`, queued on the new line
    with this line's seq as its id. The rewind and the text are one line, so a kill
    leaves either the old exchange or the new line with the text queued, never a rewind
    without the text."""


class SessionSystem(Event, tag="session/system", kw_only=True, frozen=True):
    """`/system TEXT`: the thread's system prompt from the next request on; `text` None
    (`/system --reset`) goes back to the default. The thread's, not its line's: the
    newest in the file holds, on whatever branch (a rewind or a retry keeps it)."""

    text: str | None = None


class SessionTitle(Event, tag="session/title", kw_only=True, frozen=True):
    """`/rename`: the thread's title from here on, instead of its first prompt (the
    listing reads the last one in the file, on whatever branch)."""

    title: str = ""


class SessionOneShot(Event, tag="session/one-shot", kw_only=True, frozen=True):
    """The thread was begun by `trove -p` (one turn, then exit), written ahead of its
    first prompt so the listing can mark it."""


class PromptDraft(Event, tag="prompt/draft", kw_only=True, frozen=True):
    """What the prompt held, unsent, when a front end closed the thread ("" once it no
    longer holds what an earlier draft kept): the next front end to open the thread
    puts it back (engine.threads.draft). Nothing the user typed is lost by quitting."""

    text: str = ""


class NoteSet(Event, tag="note/set", kw_only=True, frozen=True):
    """A task note write; the notebook replay (continuity/notes.py) applies the limits."""

    key: str
    content: str
    source_ids: list[str] | None = None


class NoteDelete(Event, tag="note/delete", kw_only=True, frozen=True):
    key: str


class UnknownEvent(msgspec.Struct, frozen=True):
    """A kind a newer Trove wrote: kept, with its fields, and written back as it was."""

    seq: int
    ts: str
    kind: str
    fields: dict[str, Any] = {}


KnownEvent = (
    UserMessage
    | AssistantMessage
    | ToolResult
    | TurnStart
    | TurnEnd
    | InboxQueued
    | InboxEdited
    | InboxRemoved
    | InboxRestored
    | CompactStart
    | CompactSummary
    | CompactEnd
    | CompactArchived
    | CommandRun
    | CommandDone
    | EndSeed
    | SessionFork
    | SessionRewind
    | SessionSystem
    | SessionTitle
    | SessionOneShot
    | PromptDraft
    | NoteSet
    | NoteDelete
)
LogEvent = Event | UnknownEvent
"""What a log holds: a known event, or one of a kind this code does not know."""

KINDS: dict[str, type[Event]] = {str(cls.__struct_config__.tag): cls for cls in KnownEvent.__args__}
"""Every known kind, by the string it is written as."""


def kind_of(cls: type[Event]) -> str:
    """The kind an event class is written as (its tag)."""
    return str(cls.__struct_config__.tag)


def line_start(cls: type[Event]) -> bytes:
    """How a line of this kind begins as written: the tag is the first field encoded."""
    config = cls.__struct_config__
    return msgspec.json.encode({config.tag_field: config.tag})[:-1]


def to_dict(event: LogEvent) -> dict[str, Any]:
    """The event as the JSON object of its line (`seq`, `ts`, `kind` and the fields)."""
    if isinstance(event, UnknownEvent):
        return {"seq": event.seq, "ts": event.ts, "kind": event.kind, **event.fields}
    out: dict[str, Any] = _as_json(msgspec.to_builtins(event))
    return out


def _as_json(value: Any) -> Any:
    """Tuples (`to_builtins` keeps them) as the lists JSON reads back."""
    if isinstance(value, tuple | list):
        return [_as_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    return value
