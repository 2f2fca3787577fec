"""Times as a person reads them."""

from __future__ import annotations


def local_time(ts: str) -> str:
    """A log `ts` as local `YYYY-MM-DD HH:MM` ("" when it is missing or malformed)."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(ts).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return ""
