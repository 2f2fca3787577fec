"""The plain subset of YAML a config file is almost always written in, read without PyYAML.

Importing PyYAML is slow at launch (its reader compiles one large Unicode
pattern), slower than everything else a config needs. Most files are
nested `key: value` lines with comments, like config.example.yaml, and for
those this reader gives exactly the data PyYAML's safe loader gives. For
anything else it answers None and the caller hands the text to PyYAML
(engine.config.yaml_reader), which also owns every error message: this module never
judges a file, it only recognises the easy ones.

What it accepts, and why each piece means the same in YAML 1.1:
- block mappings indented with spaces, keys `[A-Za-z_][A-Za-z0-9_]*`,
  no key twice in one mapping (the strict loader refuses those, with the line)
  and no key YAML reads as a bool or null (`on:`, `null:`);
- a value that is `true`/`false`, `null`/`~`/nothing, a decimal integer
  without a sign or leading zero (`-` allowed), a decimal with digits on both
  sides of the point, a quoted string without escapes or its own quote, or a
  plain word that starts with a letter or `$` and holds none of the
  characters YAML gives meaning to (no space, `#`, `,`, `[`, `]`, `'`, `"`,
  no `: ` or a trailing `:`) and is not one of YAML 1.1's other spellings
  of a bool or null (`yes`, `Off`, `NULL` … are left to PyYAML);
- comments after whitespace, blank lines, LF or CRLF line ends, and only
  printable ASCII (no tab).
"""

from __future__ import annotations

import re

_KEY = r"[A-Za-z_][A-Za-z0-9_]*"
_LINE = re.compile(rf"( *)({_KEY}):(?:[ \t]+([^#\s].*?))?[ \t]*(?:[ \t]#.*)?")
"""Indent, key, and the value (None when the line ends after the colon or a comment)."""
_PRINTABLE = re.compile(r"[\x20-\x7e\n\r]*")
"""ASCII text and line ends: PyYAML refuses some other characters, with its own message."""
_COMMENT = re.compile(r"[ \t]*(?:#.*)?")
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")
_WORD = re.compile(r"[A-Za-z$][A-Za-z0-9_.:/@${}+=%~^&*!?<>()-]*")
_QUOTED = re.compile(r"\"[^\"\\]*\"|'[^']*'")
_CONSTANTS: dict[str, object] = {"true": True, "false": False, "null": None, "~": None}
_OTHER_SPELLINGS = frozenset((
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "True", "TRUE", "False", "FALSE",
    "on", "On", "ON", "off", "Off", "OFF", "Null", "NULL",
))  # fmt: skip
"""Words YAML 1.1 (or some reader of it) takes for a bool or null: never guessed here."""


class _NotPlain(Exception):
    """The text leaves the subset: PyYAML must read it."""


def plain_scalar(text: str) -> tuple[bool, object]:
    """(True, value) when `text` is a scalar of the subset, else (False, None)."""
    try:
        return True, _scalar(text)
    except _NotPlain:
        return False, None


def _scalar(text: str) -> object:
    if text in _CONSTANTS:
        return _CONSTANTS[text]
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    if _QUOTED.fullmatch(text):
        return text[1:-1]
    if _WORD.fullmatch(text) and text not in _OTHER_SPELLINGS and not text.endswith(":"):
        return text
    raise _NotPlain


def parse_plain(text: str) -> dict[str, object] | None:
    """The file's data when all of it is in the subset, else None (ask PyYAML).

    An empty file, or one of comments only, is None too: PyYAML's reading
    of it (no document) is the caller's to report.
    """
    try:
        return _parse(text)
    except _NotPlain:
        return None


def _parse(text: str) -> dict[str, object] | None:
    lines = text.replace("\r\n", "\n")
    if not _PRINTABLE.fullmatch(lines) or "\r" in lines:
        raise _NotPlain  # tabs, other controls, non-ASCII text, a lone CR
    root: dict[str, object] = {}
    # Open mappings, innermost last: (indent of their keys, the mapping).
    stack: list[tuple[int, dict[str, object]]] = [(0, root)]
    pending: tuple[int, dict[str, object], str] | None = None
    """A `key:` with nothing after it: a nested mapping if deeper lines follow, else null."""
    for line in lines.split("\n"):
        if _COMMENT.fullmatch(line):
            continue
        found = _LINE.fullmatch(line)
        if found is None:
            raise _NotPlain
        indent = len(found.group(1))
        key, value = found.group(2), found.group(3)
        if pending is not None:
            above, parent, name = pending
            pending = None
            if indent > above:  # the first key of a nested mapping fixes its indent
                child: dict[str, object] = {}
                parent[name] = child  # else it stays null, as set when it was read
                stack.append((indent, child))
        while stack and indent < stack[-1][0]:
            stack.pop()
        if not stack or indent != stack[-1][0]:
            raise _NotPlain  # a dedent to an indent no open mapping has
        mapping = stack[-1][1]
        if key in mapping or key in _CONSTANTS or key in _OTHER_SPELLINGS:
            raise _NotPlain  # a duplicate key (the strict loader says where), or `on:` (a bool)
        if value is None or value == "":
            mapping[key] = None
            pending = (indent, mapping, key)
        else:
            mapping[key] = _scalar(value)
    if not root:
        return None
    return root
