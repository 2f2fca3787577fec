"""What the corpus counts as a token: one streamed chunk, cut the way GPT-style tokenizers
pre-split text (a word with its leading space, a run of digits, a run of punctuation, a run
of whitespace), so a reply streams in pieces of the size real servers send."""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"'(?:s|t|re|ve|m|ll|d)\b"  # English contractions
    r"| ?[^\W\d_]+"  # a word, with the space before it
    r"| ?\d{1,3}"  # up to three digits
    r"| ?(?:[^\s\w]|_)+"  # punctuation (and underscores)
    r"|\s+(?!\S)"  # whitespace, leaving one space for the word after it
    r"|\s+"
)


def split(text: str) -> list[str]:
    """`text` in tokens; joined back they are `text` exactly."""
    found = _TOKEN.findall(text)
    if "".join(found) != text:  # every character belongs to one of the classes above
        raise ValueError("text the tokenizer cannot cover")
    return found


def count(text: str) -> int:
    return len(_TOKEN.findall(text))
