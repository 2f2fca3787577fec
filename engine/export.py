"""A thread written out for people (Markdown) and for programs (its raw events, JSON)."""

from __future__ import annotations

import json
from pathlib import Path

from engine.events import AssistantMessage, LogEvent, ToolResult, UserMessage, to_dict
from engine.private import private_dir, write_private


def thread_markdown(thread_id: str, events: list[LogEvent]) -> str:
    lines = [f"# Trove thread {thread_id}", ""]
    for event in events:
        if isinstance(event, UserMessage):
            label = "Checkpoint" if event.checkpoint is not None else "User"
            lines += [f"## {label}", "", event.text, ""]
        elif isinstance(event, AssistantMessage):
            lines += ["## Assistant", "", event.content or "", ""]
            for call in event.calls:
                lines += [f"- tool `{call.name}`: `{call.arguments}`"]
        elif isinstance(event, ToolResult):
            lines += ["```", event.content, "```", ""]
    return "\n".join(lines)


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
