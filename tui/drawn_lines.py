"""The newest replies as they were drawn at quit, kept beside the thread for its next open.

A resumed thread's first frame used to load Rich's Markdown, markdown-it and
Pygments (~30 ms, a tenth of a launch) and parse every reply on the screen,
only to draw again what the last session drew. At quit the lines of the
newest replies go to `drawn.json` beside the log; the next open hands each
reply its lines, and the reply uses them instead of rendering only when all
that the drawing depends on is the same: its text (a digest), its width and
style, the theme, and the renderer (the source files of Rich, markdown-it,
Pygments, Textual and Trove's reply widgets, by size and mtime). Anything
else, a missing, stale, torn or hostile file included, is a miss: the reply
renders as it always did. The file is read only when it is a regular file of
at most `MAX_BYTES` (engine.private.open_derived: a link, a FIFO, a device
are misses, never followed or waited on). Replies with links or with code
drawn plain while its lexer was built are not kept: the first would lose
their hover, the second their highlighting.

No import here loads a Markdown parser; the lines become Strips only when a
reply uses them, on the loop, while the file is read in the open's thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from engine.util.private import read_derived, write_derived
from engine.util.safe_text import safe_text

if TYPE_CHECKING:
    from textual.strip import Strip

FILE_NAME = "drawn.json"
FORMAT = 1
MAX_BYTES = 1 << 20
"""A larger file is not read: it was not written by this code."""

Segment = tuple[str, str | None]
"""A run of text and its Rich style (None: unstyled)."""

_RENDERER_FILES = (
    ("rich", ("markdown.py", "syntax.py", "text.py", "segment.py", "style.py")),
    ("markdown_it", ("main.py", "renderer.py")),
    ("pygments", ("lexer.py", "formatter.py")),
    ("textual", ("visual.py", "strip.py", "content.py")),
    ("tui", ("widgets/replayed_markdown.py", "widgets/chat_message.py", "code_lexers.py")),
)
"""What a reply's drawing is made by: a change to any of these files makes every kept
reply a miss (an upgrade, an edit of an editable install)."""


class DrawnReply(msgspec.Struct, frozen=True, gc=False):
    """One reply's lines for one width and style."""

    seq: int
    digest: str
    width: int
    style: str
    lines: list[list[Segment]]

    def strips(self) -> list[Strip] | None:
        """The lines as Textual strips (None: a style that does not parse)."""
        return decode_lines(self.lines)


def decode_lines(lines: Iterable[Iterable[Segment]]) -> list[Strip] | None:
    """Lines as `encode_lines` gives them, as Textual strips (None: a style that does not
    parse)."""
    from rich.errors import StyleSyntaxError
    from rich.segment import Segment as RichSegment
    from rich.style import Style
    from textual.strip import Strip

    parse = Style.parse
    try:
        return [
            Strip([RichSegment(text, None if s is None else parse(s)) for text, s in line])
            for line in lines
        ]
    except StyleSyntaxError:
        return None


Kept = Mapping[int, DrawnReply]
"""Replies' lines as a thread's last session drew them, by the seq of their log event."""


class _File(msgspec.Struct, frozen=True):
    format: int
    renderer: str
    replies: list[DrawnReply]


_DECODER = msgspec.json.Decoder(_File)
_ENCODER = msgspec.json.Encoder()


def digest(text: str) -> str:
    """What names a reply's text in the file (its text is in the log already)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def style_key(theme: str, style: object) -> str:
    """The part of a reply's key its widget gives: the theme and its own resolved style."""
    return f"{theme}|{style!r}"


def renderer_id() -> str:
    """The identity of the code that draws a reply (see `_RENDERER_FILES`)."""
    parts = [str(FORMAT), sys.version]
    for package, files in _RENDERER_FILES:
        spec = importlib.util.find_spec(package)
        locations = spec.submodule_search_locations if spec is not None else None
        if not locations:
            parts.append(f"{package}: missing")
            continue
        base = Path(next(iter(locations)))
        for name in files:
            try:
                stat = os.stat(base / name)
            except OSError:
                parts.append(f"{package}/{name}: missing")
            else:
                parts.append(f"{package}/{name}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


def _clean(reply: DrawnReply) -> bool:
    """Nothing in its lines that the terminal would take for a control."""
    texts = (text for line in reply.lines for text, _ in line)
    return all(safe_text(text) == text and "\n" not in text for text in texts)


def load(thread_dir: Path) -> dict[int, DrawnReply]:
    """The kept replies by seq; empty when there is no usable file (never raises)."""
    try:
        kept = _DECODER.decode(read_derived(thread_dir / FILE_NAME, MAX_BYTES))
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, ValueError):
        return {}
    if kept.format != FORMAT or kept.renderer != renderer_id():
        return {}
    return {reply.seq: reply for reply in kept.replies if _clean(reply)}


def encode_lines(strips: Iterable[Strip]) -> list[list[Segment]] | None:
    """A reply's strips as kept in the file (None: it holds a link, so it is not kept)."""
    lines: list[list[Segment]] = []
    for strip in strips:
        line: list[Segment] = []
        for segment in strip:
            style = segment.style
            if style is not None and (style.link or style.meta):
                return None
            line.append((segment.text, None if style is None else str(style)))
        lines.append(line)
    return lines


def save(thread_dir: Path, replies: Iterable[DrawnReply]) -> None:
    """Write the file atomically (off the loop: at quit, in a thread); a failure leaves the
    file unused or as it was, never an error: it only saves the next open some work."""
    replies = list(replies)
    path = thread_dir / FILE_NAME
    if not replies:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        return
    data = _ENCODER.encode(_File(FORMAT, renderer_id(), replies))
    if len(data) <= MAX_BYTES:
        # One name: only the thread's writer (it holds the lock) keeps its lines, and a
        # copy a kill left half written is overwritten by the next, not left behind.
        write_derived(path, [data], temporary=path.with_name(f".{FILE_NAME}.tmp"))
