"""A tool result too long for the context: cut there, whole everywhere else.

The log keeps every result whole, and so do the active history and the
archive the history tools read. What a request carries (and what compaction
summarizes) is the head of a long result with a note naming its source id, so
`history_read` can page through the rest. The id is the one the continuity
archive gives the same message (`source_id`, defined here, below both).
"""

from __future__ import annotations

import hashlib

TOOL_RESULT_CONTEXT_CHARS = 16000
"""Characters of one tool result a request carries; the rest is read with history_read."""
NOTE_CHARS = 300
"""Room the note takes, for the token estimate."""


def source_id(role: str, seq: int, text: str) -> str:
    """'r' + 32 hex over role, message identity and text.

    Hashing the text as well as the seq makes an edited message a new source
    version, so an old citation can never silently point at changed words.
    """
    digest = hashlib.sha256(f"{role}\0{seq}\0{text}".encode()).hexdigest()
    return "r" + digest[:32]


def context_chars(content: str) -> int:
    """Characters of a tool result as the context holds it (for token estimates)."""
    size = len(content)
    return size if size <= TOOL_RESULT_CONTEXT_CHARS else TOOL_RESULT_CONTEXT_CHARS + NOTE_CHARS


def cut_for_context(seq: int, content: str) -> str:
    """The result as a request carries it: whole when short, else its head and a note."""
    if len(content) <= TOOL_RESULT_CONTEXT_CHARS:
        return content
    head = content[:TOOL_RESULT_CONTEXT_CHARS]
    return (
        f"{head}\n\n[Trove cut this tool result for the context: {len(content):,} characters,"
        f" the first {TOOL_RESULT_CONTEXT_CHARS:,} shown. The whole result is kept: call"
        f" history_read with source_id {source_id('tool', seq, content)} and offset"
        f" {TOOL_RESULT_CONTEXT_CHARS} to read on.]"
    )
