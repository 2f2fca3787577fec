"""What the inspector reads from the archive; every function here blocks.

SQLite reads can wait on a capture's write lock (up to its busy timeout), so
the tabs call these only from workers (`asyncio.to_thread`), never on the
event loop. Each takes a `Snapshot` taken on the loop (a cheap copy of the
log events and the active messages), so a read sees one consistent position
of the thread even while the conversation moves on.

Search, read and notes go through the same `HistoryView` and `notebook_report`
as the model's tools and the CLI: the inspector shows exactly what the model
can see, with the same statuses. The batch report is the engine's
(`engine.continuity.batch_report`); the Batches tab calls it the same way.
"""

from __future__ import annotations

from typing import Any

from engine.continuity import Snapshot
from engine.continuity.notes.notebook import notebook_report


def search(snapshot: Snapshot, query: str) -> dict[str, Any]:
    """The `history_search` result the model would get for this query."""
    return snapshot.view().search(query)


def read(snapshot: Snapshot, source_id: str, offset: int) -> dict[str, Any]:
    """The `history_read` page the model would get (4,000 characters from `offset`)."""
    return snapshot.view().read(source_id, offset)


def notes(snapshot: Snapshot) -> dict[str, Any]:
    """The task notebook with each citation's status, and the history status."""
    return notebook_report(snapshot)
