"""A thread written out for people (Markdown) and for programs (its raw events, JSON)."""

from __future__ import annotations

import json
from pathlib import Path

from engine.events import (
    AssistantMessage,
    LogEvent,
    ToolResult,
    TurnEnd,
    UserMessage,
    to_dict,
)
from engine.util.private import private_dir, write_private


def thread_markdown(thread_id: str, events: list[LogEvent]) -> str:
    """The thread as Markdown: each message under its speaker's heading.

    A reply that did not end as the model meant is marked after its text, so
    nobody takes it for a whole answer: "_(reply cancelled)_" when the user
    stopped it, "_(reply cut off: …)_" with the turn's error when the stream
    failed. A steer (text sent while a reply ran, read by the model before its
    next step) starts with "**Steer:**".
    """
    lines = [f"# Trove thread {thread_id}", ""]
    for index, event in enumerate(events):
        if isinstance(event, UserMessage):
            label = "Checkpoint" if event.checkpoint is not None else "User"
            steer = "**Steer:** " if event.placement == "next-step" else ""
            lines += [f"## {label}", "", steer + event.text, ""]
        elif isinstance(event, AssistantMessage):
            lines += ["## Assistant", "", event.content or "", ""]
            for call in event.calls:
                lines += [f"- tool `{call.name}`: `{call.arguments}`"]
            if event.cancelled:
                lines += ["_(reply cancelled)_", ""]
            elif event.interrupted:
                lines += [f"_(reply cut off: {_why_cut_off(events, index)})_", ""]
        elif isinstance(event, ToolResult):
            lines += ["```", event.content, "```", ""]
    return "\n".join(lines)


def _why_cut_off(events: list[LogEvent], index: int) -> str:
    """The error of the turn the reply at `index` ends (its `turn/end` comes after it)."""
    for later in range(index + 1, len(events)):  # no copy of the rest of the thread
        event = events[later]
        if isinstance(event, TurnEnd):
            if event.error:
                return " ".join(event.error.split())
            break
    return "the stream ended before the reply was complete"


def export_thread(home: Path, thread_id: str, events: list[LogEvent]) -> list[Path]:
    """Write `exports/{thread}.md` and `.json` under the home (private); blocking file I/O."""
    directory = private_dir(home / "exports", base=home)
    base = directory / thread_id
    markdown = base.with_suffix(".md")
    write_private(markdown, thread_markdown(thread_id, events).encode())
    raw = base.with_suffix(".json")
    data = {"thread": thread_id, "events": [to_dict(event) for event in events]}
    write_private(raw, json.dumps(data, ensure_ascii=False, indent=1).encode())
    return [markdown, raw]
