"""A tool result from an MCP server as the text the model reads.

Text parts are kept as they are (the log keeps them whole; front ends escape
what they draw); other parts are named, not inlined: an image's bytes are no
use to a text model and would fill its context.
"""

from __future__ import annotations

import json
from typing import Any


def result_text(result: Any) -> str:
    """The text of a `CallToolResult` (an error result says so first)."""
    parts: list[str] = []
    for part in getattr(result, "content", None) or ():
        kind = getattr(part, "type", "")
        if kind == "text":
            parts.append(str(getattr(part, "text", "")))
        elif kind in ("image", "audio"):
            mime = getattr(part, "mime_type", None) or kind
            parts.append(f"[{kind} ({mime}) not shown]")
        elif kind == "resource_link":
            parts.append(f"[resource {getattr(part, 'uri', '')}]")
        elif kind == "resource":
            resource = getattr(part, "resource", None)
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str) else "[binary resource not shown]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    text = "\n".join(parts)
    if getattr(result, "is_error", False):
        return f"[the tool reported an error]\n{text}"
    return text
