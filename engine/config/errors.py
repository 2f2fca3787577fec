"""What a bad config is: one line naming the file and the key, and the quoting it uses."""

from __future__ import annotations

from engine.errors import TroveError


class ConfigError(TroveError):
    """A bad config, told in exactly one line so the CLI can print it and exit 2.

    The text is '<file>: <key.path>: expected <what>, got <what>' for values, or
    '<file>:<line>: <problem>' for YAML syntax errors. Line breaks that sneak in
    (from a file name or a value) are folded so the one-line promise always holds.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.splitlines()))


def quote(text: str, limit: int = 60) -> str:
    """repr() of text cut to `limit` characters, so an error line stays readable."""
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return repr(text)
