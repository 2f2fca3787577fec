"""What a compaction that committed did: the span it replaced and where the originals went."""

from __future__ import annotations

from typing import Any

from msgspec import Struct


class CompactOutcome(Struct, frozen=True):
    start: int
    checkpoint: int
    replaced: int
    tokens_before: int
    tokens_after: int
    archive: dict[str, Any] | None

    def describe(self) -> str:
        text = (
            f"Compacted {self.replaced} messages "
            f"(≈{self.tokens_before:,} → ≈{self.tokens_after:,} tokens)."
        )
        if self.archive and "batch" in self.archive:
            text += f" The originals are archived as batch {self.archive['batch']}."
        elif self.archive:
            text += " The archive could not store the originals (history unavailable)."
        return text
