"""Server-sent events cut from raw bytes: the data of each event, nothing parsed.

The SDK's own decoder builds an object per event and a pydantic model per chunk,
which costs a core at fast token rates; this splitter does a few bytes operations
per read and leaves JSON to the caller (orjson). Only ``data:`` lines matter to chat
completions: the other lines are skipped, as the SDK skips them for this endpoint.
"""

from __future__ import annotations


class EventSplitter:
    """Feeds bytes in, gets each finished event's data out (lines joined by a newline).

    An event ends at a blank line; lines end in ``\\n``, ``\\r\\n`` or ``\\r``. A
    line or event cut across reads is held until the rest arrives.
    """

    def __init__(self) -> None:
        self._tail = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        buf = self._tail + chunk if self._tail else chunk
        if b"\r" in buf:
            held = buf.endswith(b"\r")  # may be the first half of a CRLF
            if held:
                buf = buf[:-1]
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if held:
                lines = buf.split(b"\n")
                self._tail = lines.pop() + b"\r"
                return self._events(lines)
        lines = buf.split(b"\n")
        self._tail = lines.pop()
        return self._events(lines)

    def _events(self, lines: list[bytes]) -> list[bytes]:
        out: list[bytes] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    out.append(data[0] if len(data) == 1 else b"\n".join(data))
                    data = self._data = []
            elif line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(b" ") else value)
        return out
