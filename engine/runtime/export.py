"""A thread written out for people (Markdown) and for programs (its raw events, JSON)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from engine.errors import TroveError
from engine.events import (
    AssistantMessage,
    LogEvent,
    SessionSystem,
    ToolResult,
    TurnEnd,
    UserMessage,
    to_dict,
)
from engine.util.private import private_dir, write_private
from engine.util.thought import thought_line

_CLOSES_DETAILS = re.compile(r"</(?=details)", re.IGNORECASE)


def thread_markdown(
    thread_id: str, events: list[LogEvent], system: SessionSystem | None = None
) -> str:
    """The thread as Markdown: each message under its speaker's heading.

    A reply that did not end as the model meant is marked after its text, so
    nobody takes it for a whole answer: "_(reply cancelled)_" when the user
    stopped it, "_(reply cut off: …)_" with the turn's error when the stream
    failed. A steer (text sent while a reply ran, read by the model before its
    next step) starts with "**Steer:**". A reply written by one of the config's named
    models says which: "## Assistant (deep)". A reasoning model's thinking is folded above
    the reply's text (`thinking_block`). A `/system` shows where it was set, under
    "## System prompt" (its reset as "_(back to the default)_"); `system`, the one in
    force, heads the thread when it was set on another branch than `events`.
    """
    lines = [f"# Trove thread {thread_id}", ""]
    if system is not None and system.text is not None and system not in events:
        # The thread's /system holds on every branch; this one was set on another.
        lines += ["## System prompt", "", system.text, ""]
    for index, event in enumerate(events):
        if isinstance(event, UserMessage):
            label = "Checkpoint" if event.checkpoint is not None else "User"
            steer = "**Steer:** " if event.placement == "next-step" else ""
            lines += [f"## {label}", "", steer + event.text, ""]
        elif isinstance(event, AssistantMessage):
            named = f" ({event.model_entry})" if event.model_entry else ""  # /model: which
            lines += [f"## Assistant{named}", ""]
            if event.reasoning:
                lines += thinking_block(event.reasoning, event.reasoning_seconds)
            if event.content or not event.reasoning:
                lines += [event.content or "", ""]
            for call in event.calls:
                lines += [f"- tool `{call.name}`: `{call.arguments}`"]
            if event.cancelled:
                lines += ["_(reply cancelled)_", ""]
            elif event.interrupted:
                lines += [f"_(reply cut off: {_why_cut_off(events, index)})_", ""]
        elif isinstance(event, ToolResult):
            lines += ["```", event.content, "```", ""]
        elif isinstance(event, SessionSystem):
            if event.text is None:
                lines += ["## System prompt", "", "_(back to the default)_", ""]
            else:
                lines += ["## System prompt", "", event.text, ""]
    return "\n".join(lines)


def thinking_block(reasoning: str, seconds: float | None) -> list[str]:
    """The thinking as a collapsed `<details>` block, its lines quoted: a code block it
    leaves open ends with the quote, so it cannot swallow the reply after it, and a
    `</details>` in it is written `&lt;/details>` so that it cannot close the block."""
    text = _CLOSES_DETAILS.sub("&lt;/", reasoning)
    quoted = [f"> {line}" if line.strip() else ">" for line in text.split("\n")]
    summary = thought_line(len(reasoning), seconds)
    return ["<details>", f"<summary>{summary}</summary>", "", *quoted, "", "</details>", ""]


def _why_cut_off(events: list[LogEvent], index: int) -> str:
    """The error of the turn the reply at `index` ends (its `turn/end` comes after it)."""
    for later in range(index + 1, len(events)):  # no copy of the rest of the thread
        event = events[later]
        if isinstance(event, TurnEnd):
            if event.error:
                return " ".join(event.error.split())
            break
    return "the stream ended before the reply was complete"


class ExportError(TroveError):
    """The export cannot be written where it was asked to go; one line."""


def export_targets(home: Path, thread_id: str, where: str = "") -> list[Path]:
    """Where `/export [PATH]` writes: `exports/{thread}.md` and `.json` under the home
    without PATH; both into PATH when it is a folder (or ends with `/`); the JSON alone
    when PATH ends in `.json`; else the Markdown alone, at PATH. A relative PATH is
    read against the current folder, `~` as home. The folder must exist."""
    if not where:
        base = home / "exports" / thread_id
        return [base.with_suffix(".md"), base.with_suffix(".json")]
    path = Path(where).expanduser().absolute()
    if where.endswith(("/", os.sep)) or path.is_dir():
        if not path.is_dir():
            raise ExportError(f"/export: no folder {path}")
        return [path / f"{thread_id}.md", path / f"{thread_id}.json"]
    if not path.parent.is_dir():
        raise ExportError(f"/export: no folder {path.parent}")
    return [path]


def export_thread(
    home: Path,
    thread_id: str,
    events: list[LogEvent],
    where: str = "",
    system: SessionSystem | None = None,
) -> list[Path]:
    """Write the thread where `export_targets` says (private files); blocking file I/O."""
    targets = export_targets(home, thread_id, where)
    if not where:
        private_dir(home / "exports", base=home)
    for target in targets:
        if target.suffix == ".json":
            data = {"thread": thread_id, "events": [to_dict(event) for event in events]}
            body = json.dumps(data, ensure_ascii=False, indent=1)
        else:
            body = thread_markdown(thread_id, events, system)
        try:
            write_private(target, body.encode())
        except OSError as exc:
            raise ExportError(f"/export: cannot write {target}: {exc.strerror or exc}") from None
    return targets
