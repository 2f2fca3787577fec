"""A thread written out for people (Markdown) and for programs (its raw events, JSON)."""

from __future__ import annotations

import json
from pathlib import Path

from engine import log as k
from engine.log import Event
from engine.private import private_dir, write_private


def thread_markdown(thread_id: str, events: list[Event]) -> str:
    lines = [f"# Trove thread {thread_id}", ""]
    for event in events:
        kind = event["kind"]
        if kind == k.USER_MESSAGE:
            label = "Checkpoint" if event.get("checkpoint") else "User"
            lines += [f"## {label}", "", str(event.get("text", "")), ""]
        elif kind == k.ASSISTANT_MESSAGE:
            lines += ["## Assistant", "", str(event.get("content") or ""), ""]
            for call in event.get("tool_calls") or ():
                lines += [f"- tool `{call.get('name')}`: `{call.get('arguments')}`"]
        elif kind == k.TOOL_RESULT:
            lines += ["```", str(event.get("content", "")), "```", ""]
    return "\n".join(lines)


def export_thread(home: Path, thread_id: str, events: list[Event]) -> list[Path]:
    """Write `exports/{thread}.md` and `.json` under the home (private); blocking file I/O."""
    directory = private_dir(home / "exports", base=home)
    base = directory / thread_id
    markdown = base.with_suffix(".md")
    write_private(markdown, thread_markdown(thread_id, events).encode())
    raw = base.with_suffix(".json")
    data = {"thread": thread_id, "events": events}
    write_private(raw, json.dumps(data, ensure_ascii=False, indent=1).encode())
    return [markdown, raw]
