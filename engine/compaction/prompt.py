"""What the summarizer is asked, and the checkpoint text that replaces a span."""

from __future__ import annotations

from collections.abc import Sequence

from engine.events import AssistantMessage, ToolResult, UserMessage
from engine.log import paused_gc
from engine.surface import Entry, Message
from engine.util.offload import run_drained
from engine.util.tool_cut import cut_for_context

SUMMARY_INSTRUCTIONS = """\
You compact a conversation between a user and an assistant so the work can \
go on with less context. Write a summary that a fresh assistant could \
continue from without the original messages. Keep, in this order:
1. The user's goals and the task in progress.
2. Decisions made and why; constraints and preferences the user stated.
3. Facts, names, numbers, paths and identifiers that later work depends on.
4. Tool calls that mattered and what they returned.
5. Open tasks, unanswered questions and the next steps.
Be concrete and complete; leave out chit-chat. Write plain text or simple \
Markdown. Do not invent anything that is not in the conversation. The exact \
original messages stay searchable in an archive, so prefer precise pointers \
(who said what, about which file or value) over long quotations."""


def _render(entry: Entry) -> str:
    """One entry as transcript text, read from its event: building (and caching) the
    chat message of every compacted entry would only add objects to free afterwards."""
    event = entry.event
    role = "summary of earlier conversation" if entry.checkpoint else entry.role
    content = event.text if isinstance(event, UserMessage) else event.content or ""
    if isinstance(event, ToolResult):
        content = cut_for_context(entry.seq, content)  # the archive keeps it whole
    lines = [f"[{role}]"]
    if content:
        lines.append(content)
    if isinstance(event, AssistantMessage):
        for call in event.tool_calls or ():
            lines.append(f"(calls tool {call.name} with {call.arguments or '{}'})")
    return "\n".join(lines)


def summary_request(entries: Sequence[Entry]) -> list[Message]:
    head, tail = "Summarize this conversation:\n\n<conversation>\n", "\n</conversation>"
    parts = [_render(entry) for entry in entries] or [""]
    # The frame joins the end parts, so the whole text is built once: on a long
    # thread each copy of it is a large move while the worker holds the GIL.
    parts[0] = head + parts[0]
    parts[-1] = parts[-1] + tail
    content = "\n\n".join(parts)
    return [
        {"role": "system", "content": SUMMARY_INSTRUCTIONS},
        {"role": "user", "content": content},
    ]


async def summary_request_offloaded(entries: Sequence[Entry]) -> list[Message]:
    """The request built in a worker thread, collection paused there.

    On a long thread it is one large string joined from a message per entry,
    and as many objects: on the UI loop a visible pause and a collection over
    the whole thread.
    """
    return await run_drained(_paused_request, entries)


def _paused_request(entries: Sequence[Entry]) -> list[Message]:
    with paused_gc():
        return summary_request(entries)


def clean_summary(raw: str) -> str:
    """The summary as stored: model output without surrounding tags or space."""
    text = raw.strip()
    for tag in ("summary",):
        if text.startswith(f"<{tag}>") and text.endswith(f"</{tag}>"):
            text = text[len(tag) + 2 : -(len(tag) + 3)].strip()
    return text


def checkpoint_text(summary: str, count: int) -> str:
    return f"[Checkpoint: a summary of {count} earlier messages, which were compacted]\n\n{summary}"
