"""What a soak run counts: the result line's counts (each defined in the package's
docstring) and the details line's, and whether the run is clean."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    locks_deleted: int = 0
    second_writers: int = 0
    sidecars_damaged: dict[str, int] = field(default_factory=dict)
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
            f"compactions={self.compactions} locks_deleted={self.locks_deleted} "
            f"second_writers={self.second_writers} "
            f"sidecars_damaged={sum(self.sidecars_damaged.values())} "
            f"({', '.join(f'{k} {n}' for k, n in sorted(self.sidecars_damaged.items()))}) "
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
            or self.second_writers
            or self.duplicated
            or self.reordered
        )
