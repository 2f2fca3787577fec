"""A corpus of real-shaped Markdown replies, generated from fixed seeds (no network).

    python -m devtools.corpus [--out DIR]   # list the replies (and write each as DIR/NAME.md)

Benchmarks stream these instead of a paragraph of one-word tokens: prose with inline
code, lists, tables, fenced code blocks of 100 to 10,000 tokens in several languages, and
one 20,000-token reply mixing all of them. A reply's tokens (`tokens.split`) are the
chunks a server streams. Sizes are exact: a `code` reply's fenced block holds exactly
`size` tokens, a `prose` or `mixed` reply is exactly `size` tokens long.
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from devtools.corpus import prose
from devtools.corpus.code import LANGUAGES
from devtools.corpus.tokens import count, split

__all__ = ["SPECS", "Spec", "count", "fenced", "reply", "split"]


@dataclass(frozen=True)
class Spec:
    name: str
    kind: str
    """`prose` (paragraphs, lists or tables), `code` (one fenced block) or `mixed`."""
    size: int
    """Tokens: of the whole reply (`prose`, `mixed`) or of the fenced block's body (`code`)."""
    seed: int
    language: str = ""
    """The fenced block's language (`code`), or what the prose holds: text, lists, tables."""


SPECS: tuple[Spec, ...] = (
    Spec("prose-1000", "prose", 1000, 11, "text"),
    Spec("lists-1000", "prose", 1000, 12, "lists"),
    Spec("tables-1000", "prose", 1000, 13, "tables"),
    Spec("python-100", "code", 100, 21, "python"),
    Spec("python-1000", "code", 1000, 22, "python"),
    Spec("python-4000", "code", 4000, 23, "python"),
    Spec("python-10000", "code", 10000, 24, "python"),
    Spec("typescript-4000", "code", 4000, 25, "typescript"),
    Spec("rust-1000", "code", 1000, 26, "rust"),
    Spec("json-1000", "code", 1000, 27, "json"),
    Spec("mixed-20000", "mixed", 20000, 31),
)
BY_NAME = {spec.name: spec for spec in SPECS}

Unit = Callable[[random.Random, bool], str]
TRIES = 12
"""Units that may overflow in a row before the fit takes small ones, then gives up on them."""


def fit(
    n: int,
    rng: random.Random,
    unit: Unit,
    pad: Callable[[int], str],
    head: str = "",
    tail: str = "",
) -> str:
    """head + units + pad + tail of exactly `n` tokens: whole units while one of a few
    tries fits, then small ones (a line or two), then a pad of one token per word."""
    units: list[str] = []

    def text(words: int) -> str:
        return head + "".join(units) + pad(words) + tail

    misses = 0
    while n - count(text(0)) >= 8 and misses < 2 * TRIES:
        units.append(unit(rng, misses >= TRIES))
        if count(text(0)) > n:
            units.pop()
            misses += 1
    left = n - count(text(0))
    if left < 0:
        raise ValueError(f"{n} tokens is too few for the head and tail alone")
    whole = text(left)
    if count(whole) != n:
        raise AssertionError(f"the pad is not one token a word: {count(whole)} != {n}")
    return whole


def fenced(language: str, n: int, rng: random.Random) -> str:
    """The body of a fenced block: `n` tokens of `language`, ending in a line break."""
    lang = LANGUAGES[language]
    return fit(n, rng, lang.unit, lang.pad, head=lang.head(n), tail=lang.tail)


INTROS = (
    "Here is the whole file with the change applied:",
    "This version keeps the old behaviour but does the work once:",
    "Below is a complete example you can run as it is:",
    "The full listing, with the helpers inlined:",
)
OUTROS = (
    "Run the tests again after you paste it; nothing else needs to change.",
    "That covers every case above, including the empty input.",
    "If the build still fails, send me the first error it prints.",
)


def _closing(words: int) -> str:
    return "In short, that is all" + prose.filler(words) + "."


def _prose_unit(kind: str) -> Unit:
    def unit(rng: random.Random, small: bool) -> str:
        if small:
            return prose.sentence(rng, inline=0.0) + "\n\n"
        blocks = [prose.paragraph(rng)]
        if rng.random() < 0.3:
            blocks.insert(0, prose.heading(rng))
        if kind == "lists":
            blocks.append(prose.bullets(rng) if rng.random() < 0.6 else prose.numbered(rng))
        elif kind == "tables":
            blocks.append(prose.table(rng))
        return "\n\n".join(blocks) + "\n\n"

    return unit


def _mixed_unit(rng: random.Random, small: bool) -> str:
    if small:
        return prose.sentence(rng, inline=0.0) + "\n\n"
    roll = rng.random()
    if roll < 0.3:
        language = rng.choice(("python", "python", "typescript", "rust", "json"))
        body = fenced(language, rng.choice((40, 120, 300, 600, 1500)), rng)
        return f"{rng.choice(INTROS)}\n\n```{language}\n{body}```\n\n"
    if roll < 0.45:
        return prose.bullets(rng) + "\n\n"
    if roll < 0.55:
        return prose.numbered(rng) + "\n\n"
    if roll < 0.65:
        return prose.table(rng) + "\n\n"
    if roll < 0.75:
        return prose.heading(rng) + "\n\n" + prose.paragraph(rng) + "\n\n"
    return prose.paragraph(rng, (4, 9)) + "\n\n"


@functools.cache
def reply(name: str) -> str:
    """The reply called `name` (one of SPECS), the same text on every call and machine."""
    spec = BY_NAME[name]
    rng = random.Random(spec.seed)
    if spec.kind == "code":
        body = fenced(spec.language, spec.size, rng)
        return f"{rng.choice(INTROS)}\n\n```{spec.language}\n{body}```\n\n{rng.choice(OUTROS)}"
    if spec.kind == "prose":
        return fit(spec.size, rng, _prose_unit(spec.language), _closing)
    # One long block a third of the way in, so the reply carries on well after it.
    head = prose.paragraph(rng) + "\n\n" + _mixed_unit(rng, False) + _mixed_unit(rng, False)
    big = fenced("python", 4000, rng)
    head += f"{rng.choice(INTROS)}\n\n```python\n{big}```\n\n"
    return fit(spec.size, rng, _mixed_unit, _closing, head=head)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.corpus", description=__doc__)
    parser.add_argument("--out", type=Path, help="write each reply as OUT/NAME.md")
    args = parser.parse_args(argv)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    for spec in SPECS:
        text = reply(spec.name)
        print(f"{spec.name:16} {len(split(text)):6} tokens {len(text):7} chars")
        if args.out is not None:
            (args.out / f"{spec.name}.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
