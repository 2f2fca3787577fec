"""Marking a query's words in text, the way the archive's index matched them.

Search results and the Reader both mark the query, so the user sees at once
why a source matched and where in it the words are. Matching mirrors the
index (`engine.continuity.archive.fts`): whole words case-insensitively, Chinese by
character pairs; text is always data, never markup and never a terminal control.
"""

from __future__ import annotations

import re

from textual.content import Content

from engine.continuity.archive import fts
from engine.util.safe_text import safe_text

MATCH_STYLE = "bold reverse $accent"


def terms_pattern(query: str) -> re.Pattern[str] | None:
    """A pattern for the query's terms as the index matches them (whole words, CJK pairs).

    The whole query as typed comes first, so "ZEBRA-4471" lights up as one
    piece where it occurs, and its words one by one elsewhere.
    """
    terms = fts.query_terms(query)
    parts: list[str] = []
    for term in terms:
        escaped = re.escape(term.text)
        if "\u3400" <= term.text[0] <= "\u9fff":
            parts.append(escaped)
        else:
            parts.append(rf"(?<![^\W_]){escaped}(?![^\W_])")
    if not parts:
        return None
    parts.sort(key=len, reverse=True)  # the longest alternative wins where two overlap
    words = query.split()
    if len(terms) > 1 and words:
        parts.insert(0, r"\s+".join(re.escape(word) for word in words))
    return re.compile("|".join(parts), re.IGNORECASE)


def highlighted(text: str, pattern: re.Pattern[str] | None) -> Content:
    """The text as data (never markup, never an escape) with every match of the query marked."""
    content = Content(safe_text(text))
    if pattern is None:
        return content
    return content.highlight_regex(pattern, style=MATCH_STYLE)
