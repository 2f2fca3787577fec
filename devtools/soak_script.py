"""What a soak round types, when its kill comes, and what the scripted model answers."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devtools.scripted_server import Reply, text
from engine import events as ev
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


@dataclass
class Plan:
    lines: list[str]
    mode: str
    """'timer' (from spawn), 'ready' (from the first logged event), or 'event'."""
    delay: float
    target: str = ""
    tty: bool = False
    """Typed at a terminal (a pty): prompts queue while a turn or /compact runs."""


def plan_round(
    rng: random.Random, round_no: int, recover_next: str, planted: dict[str, int]
) -> Plan:
    """What one round types, and when its kill comes; records the facts it plants."""
    prompts = []
    # Two prompts at least before a /compact aimed at: with fewer, the
    # recent context kept can leave nothing worth compacting.
    for i in range(rng.randint(2, 4) if round_no > 1 else 1):
        fact = f"FACT-{round_no % 10000:04d}-{i}-{rng.getrandbits(32):08x}"
        planted[fact] = round_no
        words = " ".join(rng.choices(WORDS, k=rng.randint(8, 30)))
        prompts.append(f"remember code {fact} because {words}")
    roll = rng.random()
    pending = recover_next == "unarchived"
    if recover_next and roll < 0.7:
        # The last reopen was skipped: hit the child's own start-up recovery.
        plan = Plan(prompts, "event", rng.choice([0.0, 0.0, rng.uniform(0, 0.03)]))
        plan.target = (
            rng.choice([ev.kind_of(ev.EndSeed), ev.kind_of(ev.CompactArchived)])
            if pending
            else ev.kind_of(ev.EndSeed)
        )
    elif roll < 0.2:
        plan = Plan(prompts, "timer", rng.uniform(0.0, 3.0))
    elif roll < 0.4:
        plan = Plan(prompts, "ready", rng.uniform(0.0, 1.5))
    else:
        target = rng.choices(
            [
                "checkpoint",
                ev.kind_of(ev.CompactStart),
                ev.kind_of(ev.CompactSummary),
                ev.kind_of(ev.CompactEnd),
                ev.kind_of(ev.TurnStart),
                ev.kind_of(ev.AssistantMessage),
                ev.kind_of(ev.InboxQueued),
            ],
            weights=[8, 4, 2, 2, 1, 1, 1],
        )[0]
        if target == ev.kind_of(ev.CompactStart):
            delay = rng.uniform(0, 0.3)
        elif target in (ev.kind_of(ev.TurnStart), ev.kind_of(ev.InboxQueued)):
            delay = rng.uniform(0, 0.25)
        else:
            delay = rng.choice([0.0, 0.0, rng.uniform(0, 0.02)])
        plan = Plan(prompts, "event", delay, target)
    if round_no == 1 and plan.target not in (
        ev.kind_of(ev.TurnStart),
        ev.kind_of(ev.AssistantMessage),
        "",
    ):
        plan = Plan(prompts, "ready", rng.uniform(0.0, 1.5))  # nothing to compact yet
    lines = list(prompts)
    if plan.target in (
        "checkpoint",
        ev.kind_of(ev.CompactStart),
        ev.kind_of(ev.CompactSummary),
        ev.kind_of(ev.CompactEnd),
    ):
        lines.insert(rng.randint(2, len(lines)), "/compact")
    elif rng.random() < 0.3:
        lines.insert(rng.randint(1, len(lines)), "/compact")
    plan.lines = lines
    plan.tty = rng.random() < 0.5
    return plan
