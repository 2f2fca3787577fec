"""Markdown prose as an assistant writes it: paragraphs with inline code, emphasis and
links, headings, bullet and numbered lists (some nested), and tables.

Every builder takes a seeded `random.Random`, so the same seed gives the same text.
"""

from __future__ import annotations

import random

SUBJECTS = (
    "the session log", "the writer", "each request", "the archive", "the parser",
    "this function", "the retry loop", "the cache", "a background worker", "the config file",
    "the test suite", "the event loop", "the stream reader", "the index", "the scheduler",
    "your handler", "the migration", "the client", "the server", "the lexer",
)  # fmt: skip
VERBS = (
    "keeps", "reads", "writes", "checks", "skips", "returns", "retries", "drops", "parses",
    "validates", "flushes", "locks", "renders", "caches", "rebuilds", "streams", "compares",
)  # fmt: skip
OBJECTS = (
    "every line", "the last entry", "a partial record", "the whole buffer", "the new value",
    "each chunk", "an empty list", "the error", "the response body", "the file handle",
    "the oldest item", "a copy of the state", "the open block", "the next batch",
)  # fmt: skip
TAILS = (
    "before it returns", "once per turn", "on every call", "when the lock is held",
    "after a restart", "only if the size changed", "without blocking the loop",
    "in the order they arrived", "as soon as it can", "when the timeout expires",
    "so nothing is lost", "in a single pass", "for the common case",
)  # fmt: skip
OPENERS = (
    "In practice,", "Note that", "As a rule,", "Here", "By default,", "Under load,",
    "In this version,", "Usually", "On the other hand,", "If you look closely,",
)  # fmt: skip
IDENTIFIERS = (
    "load_config()", "SessionLog.open", "max_retries", "asyncio.gather", "--verbose",
    "os.fsync", "timeout=30", "__init__.py", "Path.read_text()", "json.loads", "None",
    "self._buffer", "await reader.read(4096)", "pyproject.toml", "git rebase -i",
    "HTTP 429", "utf-8", "KeyError", "list[str]", "tmp/cache", "PYTHONPATH",
)  # fmt: skip
LINKS = (
    ("the documentation", "https://docs.example.org/guide/streams"),
    ("this issue", "https://git.example.org/project/issues/1234"),
    ("the changelog", "https://example.org/changelog#v2"),
)
HEADINGS = (
    "What goes wrong", "Why it happens", "The fix", "How to check it", "Trade-offs",
    "A smaller example", "Edge cases", "Performance", "Putting it together", "Next steps",
)  # fmt: skip


def sentence(rng: random.Random, *, inline: float = 0.35) -> str:
    """One sentence; with probability `inline` it carries a code span, sometimes emphasis."""
    words = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)]
    if rng.random() < 0.6:
        words.append(rng.choice(TAILS))
    if rng.random() < inline:
        words.insert(rng.randint(1, len(words)), f"(see `{rng.choice(IDENTIFIERS)}`)")
    roll = rng.random()
    if roll < 0.08:
        words[-1] = f"**{words[-1]}**"
    elif roll < 0.14:
        words[1] = f"*{words[1]}*"
    elif roll < 0.18:
        text, url = rng.choice(LINKS)
        words.append(f"(described in [{text}]({url}))")
    if rng.random() < 0.3:
        first = rng.choice(OPENERS)
        return f"{first} {' '.join(words)}."
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def paragraph(rng: random.Random, sentences: tuple[int, int] = (3, 6)) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(*sentences)))


def heading(rng: random.Random, level: int = 2) -> str:
    return f"{'#' * level} {rng.choice(HEADINGS)}"


def _item(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return f"`{rng.choice(IDENTIFIERS)}` {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
    return sentence(rng, inline=0.5).rstrip(".")


def bullets(rng: random.Random) -> str:
    """A bullet list of 3 to 7 items, some with a nested list under them."""
    lines: list[str] = []
    for _ in range(rng.randint(3, 7)):
        lines.append(f"- {_item(rng)}")
        if rng.random() < 0.25:
            lines.extend(f"  - {_item(rng)}" for _ in range(rng.randint(1, 3)))
    return "\n".join(lines)


def numbered(rng: random.Random) -> str:
    """A numbered list of steps, 3 to 8 of them."""
    return "\n".join(f"{i}. {_item(rng)}." for i in range(1, rng.randint(3, 8) + 1))


COLUMNS = (
    ("Option", "Default", "Meaning"),
    ("Case", "Before", "After", "Change"),
    ("Field", "Type", "Required", "Notes"),
    ("Step", "Time (ms)", "Calls", "Share", "Where"),
)


def _cell(rng: random.Random, column: int) -> str:
    roll = rng.random()
    if column == 0:
        return f"`{rng.choice(IDENTIFIERS)}`"
    if roll < 0.4:
        return f"{rng.randint(0, 9999):,}"
    if roll < 0.55:
        return rng.choice(("yes", "no", "n/a", "—"))
    return rng.choice(OBJECTS)


def table(rng: random.Random) -> str:
    """A pipe table of 4 to 14 rows, its columns aligned by the separator row."""
    header = rng.choice(COLUMNS)
    align = [rng.choice((":---", "---:", ":---:", "---")) for _ in header]
    rows = [
        "| " + " | ".join(_cell(rng, c) for c in range(len(header))) + " |"
        for _ in range(rng.randint(4, 14))
    ]
    return "\n".join(["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |", *rows])


def filler(words: int) -> str:
    """`words` plain words, each one token (a space and a word): the exact fit's padding."""
    return "".join(f" {('more', 'detail', 'here', 'too')[i % 4]}" for i in range(words))
