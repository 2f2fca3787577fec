"""The plain subset of YAML a config file is almost always written in, read without PyYAML.

PyYAML is slow to import at launch, and most files are nested `key: value` lines
with comments, like config.example.yaml: for those this reader gives exactly what
PyYAML's safe loader gives. For anything else it answers None and the caller hands
the text to PyYAML (yaml_reader.py), which owns every error message.

It accepts block mappings indented with spaces (plain keys, none twice, none YAML
reads as a bool or null); values that are a bool, null, a decimal integer or
number, a quoted string without escapes, or a plain word with none of the
characters YAML gives meaning to and not one of YAML 1.1's other bool or null
spellings; comments, blank lines, LF or CRLF, printable ASCII only.
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
    if text == "{}" or text == "[]":  # an empty mapping or list, as YAML's flow style writes it
        return {} if text == "{}" else []
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
