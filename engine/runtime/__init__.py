"""The runtime: one open thread assembled with its driver, compaction, continuity and
commands, the way every front end uses it."""

from engine.runtime.assembly import INTERRUPTED_COMPACTION, Runtime, open_thread

__all__ = ["INTERRUPTED_COMPACTION", "Runtime", "open_thread"]
