"""The scripted model the soak's children talk to, the config file that points them at
it, and the filler words its replies and the typed prompts are made of."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from devtools.scripted_server import Reply, text
from engine.compaction.prompt import SUMMARY_INSTRUCTIONS

FILLER = "the quick brown fox jumps over a lazy dog while the river keeps running past the old mill"
WORDS = FILLER.split()


class SoakModel:
    """The scripted model: paced replies that never repeat a fact, summaries that omit them.

    A summary or reply that repeated a fact would keep it findable on the
    surface even if its original were lost, and hide exactly what the soak
    looks for.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.paced = True

    def _words(self, n: int) -> str:
        return " ".join(self.rng.choices(WORDS, k=n))

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or [{}]
        first = messages[0] if isinstance(messages[0], dict) else {}
        if first.get("role") == "system" and first.get("content") == SUMMARY_INSTRUCTIONS:
            content = "The user planted codes to remember; " + self._words(14) + "."
            rate = 120.0
        else:
            content = "Noted, I will keep that in mind. " + self._words(28) + "."
            rate = 350.0
        return text(content, chunk_chars=4, per_second=rate if self.paced else None)


def write_config(path: Path, base_url: str) -> None:
    """The children's config: the scripted model, a small window, retention far above a run."""
    path.write_text(
        "model:\n"
        f"  base_url: {base_url}\n"
        "  api_key: soak-key\n"
        "  name: soak-model\n"
        "  context_window: 900\n"
        "  max_retries: 0\n"
        "  timeout: 15\n"
        "compaction:\n"
        "  threshold: 0.5\n"
        "  keep_recent_tokens: 120\n"
        "task_continuity:\n"
        "  max_batches: 1000000\n"
        "  max_records_per_batch: 1000000\n",
        encoding="utf-8",
    )
