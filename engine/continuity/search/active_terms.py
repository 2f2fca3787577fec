"""Which query terms a text holds, decided without tokenizing it (`--all`'s active messages).

`history_search` tokenizes each active message (fts.tokens) and caches the
token sets for the thread's life; `--all` looks at a hundred threads once,
where tokenizing every message would be most of its time. A word is a token
only as a whole run of letters and digits, so finding it with a boundary on
each side decides exactly what the token sets would (a CJK bigram or a lone
CJK character needs no boundary): tests/test_archive_terms.py holds the two
equal on random text.
"""

from __future__ import annotations

import re

from engine.continuity.archive import fts
from engine.continuity.archive.records import Source
from engine.continuity.search.view import ActiveIndex

Pattern = tuple[str, re.Pattern[str], bool]
"""A term's text, a pattern finding it, and whether a word character may not precede it."""


def term_patterns(terms: list[fts.Term]) -> list[Pattern]:
    """Per term, how to find it in casefolded text exactly where a token would be.

    A word is a token only as a whole run of letters and digits (fts._TOKEN),
    so it needs a boundary each side; a CJK bigram is a token wherever it
    occurs, and a lone CJK character (a prefix term) starts one wherever it
    occurs. So this decides a match without tokenizing the text. The
    pattern starts with the term itself, so `re` finds candidates with its
    literal scan; the boundary before is checked per candidate (a
    look-behind would make every search try every position).
    """
    patterns: list[Pattern] = []
    for term in terms:
        text = re.escape(term.text)
        if _is_cjk(term.text[0]):
            patterns.append((term.text, re.compile(text), False))
        else:
            patterns.append((term.text, re.compile(f"{text}(?!{_WORD})"), True))
    return patterns


_WORD = r"[^\W_\u3400-\u9fff]"


def _is_cjk(char: str) -> bool:
    return "\u3400" <= char <= "\u9fff"


def _found(text: str, term: str, pattern: re.Pattern[str], bounded: bool) -> bool:
    if term not in text:  # most texts, decided at C speed
        return False
    for match in pattern.finditer(text):
        at = match.start()
        if not bounded or at == 0:
            return True
        before = text[at - 1]  # a word character is what `\w` is, less `_` and CJK
        if not before.isalnum() or _is_cjk(before):
            return True
    return False


def held(text: str, patterns: list[Pattern]) -> int:
    """How many terms a casefolded text holds as tokens."""
    return sum(1 for term, pattern, bounded in patterns if _found(text, term, pattern, bounded))


class Held(ActiveIndex):
    """The term counts of the active sources, found by pattern (no text is tokenized)."""

    def __init__(self, counts: dict[str, int]) -> None:
        super().__init__()
        self.counts = counts

    def matched(self, record: Source, terms: list[fts.Term]) -> int:
        return self.counts.get(record.source_id, 0)
