"""Compaction: one region transaction behind every entry point.

Manual (/compact), automatic (pressure), overflow and explicit-range
compaction all run `run_region`, whose `compact/start` … `compact/end`
bracket in the session log is the only lock.
"""

from engine.compaction.errors import CompactionCancelled, CompactionError, ErrorKind
from engine.compaction.outcome import CompactOutcome
from engine.compaction.service import CompactService
from engine.compaction.transaction import InvalidRangeError, Region, run_region

__all__ = [
    "CompactOutcome",
    "CompactionCancelled",
    "CompactService",
    "CompactionError",
    "ErrorKind",
    "InvalidRangeError",
    "Region",
    "run_region",
]
