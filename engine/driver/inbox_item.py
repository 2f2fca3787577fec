"""An inbox item: one accepted input, with the id it keeps until it is delivered.

The id is the seq of its `inbox/queued` event, so it is stable across a
crash; the placement says whether it may steer a running turn.
"""

from __future__ import annotations

from typing import Literal, NewType

from msgspec import Struct

InboxItemId = NewType("InboxItemId", int)
Placement = Literal["follow-up", "next-step"]


class InboxItem(Struct):
    id: InboxItemId
    text: str
    waking: bool
    placement: Placement
    restored: bool = False
    """Found queued when the log was opened: it runs as a turn of its own, in order,
    as it would have had the process not ended, instead of merging into the next one."""
    held: bool = False
    """Being edited in a front end: neither it nor anything queued behind it is taken
    until the edit is saved or dropped, so the queue never sends the old text."""
