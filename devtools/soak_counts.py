"""What the soak counts after each kill, and when a planted fact counts as found.

Each count is of distinct items over the whole run (a fact missing in several
rounds counts once):

- kills: SIGKILLs delivered to a live child.
- lost_input: prompts the log accepted (`inbox/queued`) that the reopened thread
  neither delivered (a `user/message` with that item id), nor removed, nor has
  back in its inbox.
- lost_facts: planted facts whose prompt was delivered but which, once the thread
  is reopened and recovered, are neither on the surface nor findable word for
  word through history search, whatever the archive status says. Retention is
  sized so nothing expires in a run, so an expired batch is a lost fact too.
- unreported: facts not findable while the archive status is neither
  `unavailable` nor `partially_expired` (it claims nothing is missing).
- wedged: rounds where the reopened thread could not take its lock, a new prompt
  did not end `ok` with nothing left queued, or `/compact` did not succeed.
- unloadable: rounds where the log did not load whole or the thread did not open.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine import events as ev
from engine.continuity.search.view import HistoryView
from engine.events import LogEvent as Event

FACT = re.compile(r"FACT-\d{4}-\d-[0-9a-f]{8}")


@dataclass
class Counts:
    kills: int = 0
    lost_input: set[int] = field(default_factory=set)
    lost_facts: set[str] = field(default_factory=set)
    unreported: set[str] = field(default_factory=set)
    wedged: int = 0
    unloadable: int = 0
    # details, for the stderr line
    mid_compaction: int = 0
    capture_window: int = 0
    recovered: set[str] = field(default_factory=set)
    exited: int = 0
    tracebacks: int = 0
    duplicated: set[int] = field(default_factory=set)
    reordered: set[int] = field(default_factory=set)
    restored: set[int] = field(default_factory=set)
    compactions: int = 0
    missed_targets: int = 0
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"kills={self.kills} lost_input={len(self.lost_input)} "
            f"lost_facts={len(self.lost_facts)} unreported={len(self.unreported)} "
            f"wedged={self.wedged} unloadable={self.unloadable}"
        )

    def details(self) -> str:
        return (
            f"mid_compaction={self.mid_compaction} capture_window={self.capture_window} "
            f"recovered_facts={len(self.recovered)} restored_input={len(self.restored)} "
            f"compactions={self.compactions} "
            f"missed_targets={self.missed_targets} child_exits={self.exited} "
            f"tracebacks={self.tracebacks} duplicated_input={len(self.duplicated)} "
            f"reordered_input={len(self.reordered)}"
        )

    @property
    def clean(self) -> bool:
        return not (
            self.lost_input
            or self.lost_facts
            or self.unreported
            or self.wedged
            or self.unloadable
            or self.exited
            or self.tracebacks
            or self.duplicated
            or self.reordered
        )


def findable(view: HistoryView, fact: str) -> bool:
    """Word for word, as a user or the model finds it: search, then read the source."""
    result = view.search(fact)
    for item in result.get("results", []):
        if fact in item.get("excerpt", ""):
            return True
        if fact in str(view.read(item["id"]).get("text", "")):
            return True
    return False


def delivered_facts(events: list[Event]) -> dict[str, int]:
    """Fact → the seq of the user message that delivered it."""
    out: dict[str, int] = {}
    for event in events:
        if isinstance(event, ev.UserMessage) and event.item_id is not None:
            for fact in FACT.findall(event.text):
                out.setdefault(fact, event.seq)
    return out
