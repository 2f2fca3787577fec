"""Text made safe for a terminal: what a model, a tool, the archive or a log says is data.

A terminal obeys control characters and escape sequences wherever they come from
(an OSC 52 sets the clipboard, a cursor query types into the shell), so every front
end passes such text through here just before a terminal sees it; the log and the
archive keep the exact bytes. What survives: printable text, newline and tab. Whole
escape sequences go (7-bit and 8-bit), then every other control and DEL; CRLF
becomes LF; bidi overrides and isolates go; lone surrogates become U+FFFD. Clean
text costs one regex search, so streaming stays cheap.
"""

from __future__ import annotations

import json
import re
from typing import Any

_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
"""C0 but tab and newline, DEL, C1, and the explicit bidi embeddings, overrides, isolates."""
_CONTROL = re.compile(f"[{_CONTROLS}]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSAFE = re.compile(f"[{_CONTROLS}\ud800-\udfff]")

_CSI = r"(?:\x1b\[|\x9b)"
_STRING = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])"
"""OSC, DCS, SOS, PM, APC: strings that run until a terminator."""
_CSI_BODY = r"[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
_STRING_BODY = r"[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
_SEQUENCE = re.compile(
    # One character class first, so the scan skips plain text at C speed; the
    # look-behinds then pick the kind of sequence that introducer starts.
    r"[\x1b\x90\x98\x9b\x9d-\x9f]"
    rf"(?:(?<=\x1b)(?:\[{_CSI_BODY}|[\]PX^_]{_STRING_BODY}|[\x20-\x2f]*[\x30-\x7e])"
    rf"|(?<=\x9b){_CSI_BODY}"
    rf"|(?<=[\x90\x98\x9d\x9e\x9f]){_STRING_BODY})"
)
"""Whole sequences, removed first so their parameters do not show as text."""
_OPEN_TAIL = re.compile(
    rf"(?:{_CSI}[\x30-\x3f]*[\x20-\x2f]*|{_STRING}[^\x07\x1b\x9c]*\x1b?|\x1b[\x20-\x2f]*)\Z"
)
"""A sequence begun at the end of a streamed piece whose end may come in the next."""

HOLD_LIMIT = 4096
"""Characters of an unfinished sequence held back before they are let through as text."""


def safe_text(text: str) -> str:
    """The text as a terminal may show it: no escape sequence, no control but \\n and \\t.

    Idempotent; clean text comes back unchanged (the same object).
    """
    if _UNSAFE.search(text) is None:
        return text
    text = _SEQUENCE.sub("", text).replace("\r\n", "\n")
    text = _CONTROL.sub("", text)
    return _SURROGATE.sub("\ufffd", text)


_JSON_ESCAPE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def safe_json(value: Any) -> str:
    """JSON with non-ASCII kept readable but every control escaped as \\uXXXX.

    `json.dumps(ensure_ascii=False)` escapes C0 but writes DEL, C1 (U+009B is
    a CSI to many terminals) and lone surrogates raw. Escaping them keeps the
    decoded value exact, so scripts still get the very text the tool returned.
    """
    dumped = json.dumps(value, ensure_ascii=False)
    if _JSON_ESCAPE.search(dumped) is None:
        return dumped
    return _JSON_ESCAPE.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)


class SafeStream:
    """`safe_text` for text that arrives in pieces, such as a streamed reply.

    A sequence split across two pieces would otherwise leave its tail as
    visible garbage, or, worse, its head unrecognised: an unfinished sequence
    at the end of a piece is held back until the next piece (or `flush`)
    completes it. Past `HOLD_LIMIT` characters it is let through, made safe.
    """

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece if self._held else piece
        self._held = ""
        if _UNSAFE.search(text) is None:
            return text
        tail = _OPEN_TAIL.search(text)
        if tail is not None and len(text) - tail.start() <= HOLD_LIMIT:
            self._held = text[tail.start() :]
            text = text[: tail.start()]
        return safe_text(text)

    def flush(self) -> str:
        """What is still held, made safe (the stream ended)."""
        held, self._held = self._held, ""
        return safe_text(held)
