"""One round's plan: the facts its prompts plant, the lines typed (and whether at a
terminal), when the kill comes, and which faults meet the files under the live child."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from devtools.soak.model import WORDS
from engine import events as ev

FACT = re.compile(r"FACT-\d{4}-\d-[0-9a-f]{8}")
FAULT_CHANCE = {"lock": 0.25, "sidecar": 0.35}
"""How often a round has each fault under its live child."""


@dataclass
class Plan:
    lines: list[str]
    mode: str
    """'timer' (from spawn), 'ready' (from the first logged event), or 'event'."""
    delay: float
    target: str = ""
    tty: bool = False
    """Typed at a terminal (a pty): prompts queue while a turn or /compact runs."""
    faults: list[tuple[float, str]] = field(default_factory=list)
    """(seconds after the spawn, 'lock' or 'sidecar'): done then, if the child still runs."""


def plan_round(
    rng: random.Random, round_no: int, recover_next: str, planted: dict[str, int]
) -> Plan:
    """Round `round_no`'s plan, aimed at start-up recovery when `recover_next` says why;
    each fact its prompts plant goes into `planted` (fact → round)."""
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
    for fault, chance in FAULT_CHANCE.items():
        if rng.random() < chance:
            plan.faults.append((rng.uniform(0.0, 1.5), fault))
    return plan
