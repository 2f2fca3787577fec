"""Which of the user's threads holds a source id: `trove history read ID` without `--thread`.

A source id names one exact message text (engine.continuity.archive.extract), so an id
that `history search --all` printed is found by looking in each thread of the user
(never another user's), newest activity first: its active messages through the summary
cache (engine.workspace.summary), then its archive, opened read-only and only when its
log says it has batches. Nothing is written or locked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from engine.config import TaskContinuityConfig
from engine.continuity.archive.status import scope_binding
from engine.continuity.archive.store import ArchiveError, ArchiveStore, archive_path
from engine.threads.paths import ThreadNotFoundError, thread_dir
from engine.workspace.search_all import thread_ids
from engine.workspace.summary import ThreadSummary, summarize


def threads_holding(home: Path, user_id: str, source_id: str) -> Iterator[str]:
    """The threads whose active messages or archive hold `source_id`, newest activity
    first. A fork holds its parent's messages under the same ids: each is yielded, so the
    caller can take the first one whose read succeeds."""
    summaries: list[ThreadSummary] = []
    for thread_id in thread_ids(home, user_id):
        try:
            summaries.append(summarize(home, user_id, thread_id))
        except (OSError, ThreadNotFoundError):
            continue  # unreadable or removed meanwhile: it holds nothing this can read
    summaries.sort(key=lambda s: (s.last_activity, s.thread), reverse=True)
    for summary in summaries:
        active = any(source.source_id == source_id for source in summary.active)
        if active or (summary.scan.refs and _archived(home, user_id, summary, source_id)):
            yield summary.thread


def _archived(home: Path, user_id: str, summary: ThreadSummary, source_id: str) -> bool:
    batches = [ref.batch for ref in summary.scan.refs]
    scope = scope_binding(user_id, summary.thread)
    path = archive_path(thread_dir(home, user_id, summary.thread))
    try:
        with ArchiveStore(path, TaskContinuityConfig(), readonly=True, scope=scope) as store:
            return bool(store.available([source_id], batches))
    except (ArchiveError, OSError):
        return False
