"""What the summarizer is asked, and the checkpoint text that replaces a span."""

from __future__ import annotations

import json
from collections.abc import Sequence

from engine.surface import Entry, Message

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
    message = entry.message
    role = "summary of earlier conversation" if entry.checkpoint else message["role"]
    content = message.get("content") or ""
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    lines = [f"[{role}]"]
    if content:
        lines.append(content)
    for call in message.get("tool_calls") or ():
        fn = call["function"]
        lines.append(f"(calls tool {fn['name']} with {fn['arguments']})")
    return "\n".join(lines)


def summary_request(entries: Sequence[Entry]) -> list[Message]:
    transcript = "\n\n".join(_render(entry) for entry in entries)
    return [
        {"role": "system", "content": SUMMARY_INSTRUCTIONS},
        {
            "role": "user",
            "content": "Summarize this conversation:\n\n<conversation>\n"
            + transcript
            + "\n</conversation>",
        },
    ]


def clean_summary(raw: str) -> str:
    """The summary as stored: model output without surrounding tags or space."""
    text = raw.strip()
    for tag in ("summary",):
        if text.startswith(f"<{tag}>") and text.endswith(f"</{tag}>"):
            text = text[len(tag) + 2 : -(len(tag) + 3)].strip()
    return text


def checkpoint_text(summary: str, count: int) -> str:
    return f"[Checkpoint: a summary of {count} earlier messages, which were compacted]\n\n{summary}"
