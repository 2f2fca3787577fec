"""The README's table of log kinds names every kind the engine declares, and no other."""

from __future__ import annotations

import re
from pathlib import Path

from engine.events import KINDS

README = Path(__file__).resolve().parent.parent / "README.md"


def documented_kinds() -> set[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("### The log's kinds", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {kind for row in rows for kind in re.findall(r"`([a-z-]+/[a-z-]+)`", row.split("|")[1])}


def test_every_log_kind_is_in_the_readme() -> None:
    assert documented_kinds() == set(KINDS)
