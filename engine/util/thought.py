"""A reasoning model's thinking summed up in a few words, as every front end says it."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """`0.4s` under ten seconds, `12s` under a minute, `3m 05s` beyond."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    return f"{whole // 60}m {whole % 60:02d}s"


def thought_line(chars: int, seconds: float | None) -> str:
    """`thought for 12s (3,456 chars)`; without a time (none was recorded), `thought
    (3,456 chars)`."""
    size = f"{chars:,} char{'' if chars == 1 else 's'}"
    if seconds is None:
        return f"thought ({size})"
    return f"thought for {duration(seconds)} ({size})"
