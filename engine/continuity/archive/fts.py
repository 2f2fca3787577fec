"""Lexical tokens for history search: casefolded words and CJK character bigrams.

One definition serves the archive (through SQLite FTS5) and the active history
(in Python), so a query matches the same way wherever its source lives.

Words are runs of letters and digits, casefolded. A run of CJK ideographs
(U+3400-U+9FFF) becomes its overlapping bigrams plus its last character, so
every character of the run starts some token: a two-character query is an
exact token, and a one-character query is a prefix search.

For the archive, Python casefolds the text and rewrites CJK runs into
space-separated bigrams; FTS5's unicode61 tokenizer (diacritics kept, so it
agrees with the Python side) then splits the words. Query terms are always
quoted, so FTS syntax typed by the model (`OR`, `*`, `NEAR(`, quotes) is plain
data and can never make a query fail.
"""

from __future__ import annotations

import re
import sys
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

MAX_TERMS = 32
FTS_TOKENIZER = "unicode61 remove_diacritics 0"

_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_TOKEN = re.compile(r"[\u3400-\u9fff]+|[^\W_\u3400-\u9fff]+")


def _cjk_tokens(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)] + [run[-1]]


# A wide-character array: extended-slice assignment interleaves a run with
# itself shifted by one in C, far faster than a Python loop per bigram.
_WIDE = "w" if sys.version_info >= (3, 13) else "u"


def _rewrite_run(match: re.Match[str]) -> str:
    run = match.group()
    if len(run) == 1:
        return " " + run + " "
    chars = array(_WIDE, run)
    out = array(_WIDE, " ") * (3 * (len(run) - 1))
    out[0::3] = chars[:-1]
    out[1::3] = chars[1:]
    return " " + out.tounicode() + run[-1] + " "


def index_text(text: str) -> str:
    """The text handed to FTS5 for one source (casefolded, CJK as bigrams).

    Text without CJK passes through after casefolding, so the cost of a large
    English capture is two C-speed passes, not a Python loop per word. ASCII
    text passes through as it is: unicode61 folds ASCII case itself (as
    casefold would), and `isascii` answers in one pass, far cheaper than
    searching the text for a CJK run.
    """
    if text.isascii():
        return text
    folded = text.casefold()
    if _CJK_RUN.search(folded) is None:
        return folded
    return _CJK_RUN.sub(_rewrite_run, folded)


def tokens(text: str) -> list[str]:
    """The tokens of a text as the index sees them (used for the active history)."""
    out: list[str] = []
    for match in _TOKEN.finditer(text.casefold()):
        word = match.group()
        if "\u3400" <= word[0] <= "\u9fff":
            out.extend(_cjk_tokens(word))
        else:
            out.append(word)
    return out


@dataclass(frozen=True)
class Term:
    """One query term; `prefix` for a lone CJK character (it starts a bigram)."""

    text: str
    prefix: bool = False

    def fts(self) -> str:
        quoted = '"' + self.text.replace('"', '""') + '"'
        return quoted + "*" if self.prefix else quoted

    def matches(self, token_set: frozenset[str] | set[str]) -> bool:
        if not self.prefix:
            return self.text in token_set
        return any(token.startswith(self.text) for token in token_set)


def query_terms(query: str) -> list[Term]:
    """Distinct terms of a query in order, at most MAX_TERMS.

    A multi-character CJK run contributes its bigrams only (the trailing
    single character would demand an exact one-character token).
    """
    seen: set[Term] = set()
    terms: list[Term] = []
    for match in _TOKEN.finditer(query.casefold()):
        word = match.group()
        if "\u3400" <= word[0] <= "\u9fff":
            if len(word) == 1:
                found = [Term(word, prefix=True)]
            else:
                found = [Term(word[i : i + 2]) for i in range(len(word) - 1)]
        else:
            found = [Term(word)]
        for term in found:
            if term not in seen:
                seen.add(term)
                terms.append(term)
    return terms[:MAX_TERMS]


def fts_query(terms: Iterable[Term], *, every: bool) -> str:
    """An FTS5 MATCH expression: all terms (AND) or any term (OR), each quoted."""
    return (" AND " if every else " OR ").join(term.fts() for term in terms)


def matched_terms(terms: list[Term], token_set: frozenset[str] | set[str]) -> int:
    """How many distinct query terms a text's token set contains."""
    return sum(1 for term in terms if term.matches(token_set))


def match_position(text: str, query: str, terms: list[Term]) -> tuple[int, int]:
    """Where an excerpt should centre: (start, length) of the best visible match.

    The whole query as typed wins when it occurs; else the longest term's
    first occurrence. Casefolding a long text that is not pure ASCII is most
    of a search's cost, so a text with CJK in it is first searched without
    folding it (`_find_unfolded`);
    only when that cannot decide is the text folded. Positions in the
    folded text equal the original's for nearly every script; if folding
    changed the length, `lower()` is used so offsets stay close.
    """
    phrase = " ".join(query.casefold().split())
    needles = ([phrase] if phrase else []) + [
        t.text for t in sorted(terms, key=lambda t: len(t.text), reverse=True)
    ]
    if not text.isascii():
        found = _find_unfolded(text, needles)
        if found is not None:
            return found
    folded = text.casefold()
    if len(folded) != len(text):
        folded = text.lower()
    for needle in needles:
        at = folded.find(needle)
        if at >= 0:
            return at, len(needle)
    return 0, 0


def _find_unfolded(text: str, needles: list[str]) -> tuple[int, int] | None:
    """The first needle's position found without casefolding `text`; None: undecided.

    A needle with no cased characters (CJK, digits) is found in the text as
    is. An ASCII needle is found in an ASCII view of the text (every other
    character replaced by one `?`, so positions are unchanged), lowercased
    in C; a needle holding `?` itself is not. Any other needle, or none
    found (a match may need a special fold such as ß -> ss), leaves the
    decision to the folded text.
    """
    ascii_view: bytes | None = None
    for needle in needles:
        if needle.upper() == needle:
            at = text.find(needle)
        elif needle.isascii() and "?" not in needle:
            if ascii_view is None:
                ascii_view = text.encode("ascii", "replace").lower()
            at = ascii_view.find(needle.encode("ascii"))
        else:
            return None
        if at >= 0:
            return at, len(needle)
    return None


def excerpt(text: str, start: int, length: int, width: int) -> tuple[int, str]:
    """A window of at most `width` characters centred on [start, start+length)."""
    if len(text) <= width:
        return 0, text
    begin = max(0, start + length // 2 - width // 2)
    begin = min(begin, len(text) - width)
    return begin, text[begin : begin + width]
