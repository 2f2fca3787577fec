"""One-line summaries of a tool call and its result, and the bounded full view.

Kept apart from the widget so the wording is testable without an app, and so
what a collapsed block costs on replay is one small parse, not a render of the
whole result. Everything returned is made safe: it comes from the model or a tool.
"""

from __future__ import annotations

import json
from typing import Any

from engine.util.safe_text import safe_text

MAX_LINES = 200
"""Lines of a result shown when a block is expanded; the rest is in the log."""
MAX_CHARS = 20_000
"""Characters shown when expanded, for results with few but enormous lines."""
_PARSE_LIMIT = 256_000
"""Results longer than this are not parsed as JSON for their summary line."""


def one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(1, limit - 1)] + "…"


def size_label(text: str) -> str:
    size = len(text.encode("utf-8", "replace"))
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _parsed(text: str) -> Any:
    if len(text) > _PARSE_LIMIT or not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _value(value: Any, limit: int) -> str:
    if isinstance(value, str):
        return one_line(value, limit)
    if isinstance(value, list):
        return f"[{len(value)} item{'' if len(value) == 1 else 's'}]"
    if isinstance(value, dict):
        return "{…}"
    return json.dumps(value)


def _fields(data: dict[str, Any], limit: int) -> str:
    parts = [f"{key}: {_value(value, 30)}" for key, value in data.items()]
    return one_line(", ".join(parts), limit)


def call_line(name: str, arguments: str, limit: int = 70) -> str:
    """`name  key: value, …`: what was asked, in one line."""
    data = _parsed(arguments)
    args = _fields(data, limit) if isinstance(data, dict) else one_line(arguments, limit)
    return safe_text(f"⚙ {name}  {args}" if args else f"⚙ {name}")


def result_line(content: str, limit: int = 90) -> str:
    """Status, size and the first line of a result: `✓ ok · 57 B · key: code`."""
    data = _parsed(content)
    size = size_label(content)
    if isinstance(data, dict):
        rest = {k: v for k, v in data.items() if k != "status"}
        status = data.get("status")
        if status == "error":
            code = rest.pop("error", "failed")
            message = rest.pop("message", "")
            text = f"✗ error: {_value(code, 30)}"
            if message:
                text += f" — {_value(message, 60)}"
            return safe_text(one_line(f"{text} · {size}", limit))
        if status is None:
            head = "✓"
        elif status in ("ok", "available"):
            head = f"✓ {status}"
        else:  # e.g. history_search's "uninitialized": not a failure, not plain success
            head = f"• {_value(status, 20)}"
        first = _fields(rest, limit)
    elif isinstance(data, list):
        head, first = "✓", _value(data, limit)
    else:
        head = "✓"
        first = next((line for line in content.splitlines() if line.strip()), "")
    text = f"{head} · {size}" + (f" · {first}" if first else "")
    return safe_text(one_line(text, limit))


def full_text(text: str) -> str:
    """The text as shown expanded: JSON indented, bounded to MAX_LINES lines / MAX_CHARS."""
    data = _parsed(text)
    if isinstance(data, (dict, list)):
        text = json.dumps(data, indent=2, ensure_ascii=False)
    lines = text.split("\n")
    shown = lines[:MAX_LINES]
    body = "\n".join(shown)
    note = ""
    if len(lines) > MAX_LINES:
        note = f"… {len(lines) - MAX_LINES} more lines not shown (the log keeps the full result)"
    if len(body) > MAX_CHARS:
        body = body[:MAX_CHARS]
        note = f"… {len(text) - MAX_CHARS} more characters not shown (the log keeps them all)"
    return safe_text(body + (f"\n{note}" if note else ""))
