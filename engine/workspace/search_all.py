"""`trove history search QUERY --all`: the user's search over every thread they own.

Only the user searches across threads; the model's tools stay in their own. Each
thread is searched exactly as `history_search` searches it (one `HistoryView`), so
every group holds the object the tool returns, plus which thread it is.

Nothing here writes or locks: logs are read through the summary cache (summary.py)
and archives opened read-only, so it works while other processes hold the threads.
A damaged log is searched up to its bad line and reported; an unreadable one is
reported and skipped. An archive is opened only when its `history.terms`
(archive/terms.py) says it may hold a match; threads go newest first and the search
stops at `max_threads` with matches, counting what was left (`threads_not_searched`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.config import TaskContinuityConfig
from engine.continuity.archive import fts, term_filter
from engine.continuity.archive import terms as archive_terms
from engine.continuity.archive.status import STATUS_DETAIL, scope_binding
from engine.continuity.archive.store import ArchiveError, ArchiveStore, archive_path
from engine.continuity.context import Snapshot
from engine.continuity.search.active_terms import Held, Pattern, held, term_patterns
from engine.continuity.search.view import HistoryView
from engine.continuity.tools import search_result
from engine.threads.paths import LOG_NAME, ThreadNotFoundError, has_log, thread_dir, user_dir
from engine.util.collector import paused_gc
from engine.workspace.summary import ThreadSummary, summarize

MAX_THREADS = 10
"""Threads with matches an answer holds by default (`--max-threads`)."""
DEGRADED = ("unavailable", "scope_unavailable")


def thread_ids(home: Path, user_id: str) -> list[str]:
    """Every thread of this user that has a log (another user's directory is never read)."""
    root = user_dir(home, user_id) / "threads"
    try:
        children = list(root.iterdir())
    except OSError:
        return []
    return sorted(c.name for c in children if has_log(c))


@dataclass
class _Thread:
    """One thread: its summary, where a match may be, and what searching it found."""

    summary: ThreadSummary
    archive: Path
    active: tuple[bool, bool]
    """Whether the active messages together hold (every term, some term): a thread
    whose messages lack one between them has none holding every term."""
    archive_may: tuple[bool, bool]
    """Whether the archive may hold (every term, some term); (True, True) when unknown."""
    store: ArchiveStore | None = None
    view: HistoryView | None = None
    counts: dict[str, int] | None = None
    """Active source id -> terms it holds, once the thread is opened."""
    result: dict[str, Any] | None = None

    def may(self, every: bool) -> bool:
        at = 0 if every else 1
        return self.active[at] or self.archive_may[at]


def _archive_may(
    summary: ThreadSummary, archive: Path, scope: str, hashes: list[int | None]
) -> tuple[bool, bool]:
    """What the thread's `history.terms` says of the query; (True, True) when it cannot say."""
    refs = summary.scan.refs
    if not refs:
        return False, False
    keys = [(ref.batch, ref.start) for ref in refs]
    terms = archive_terms.load(archive, scope)
    if terms is None or not terms.covers(keys):
        return True, True
    every, some = terms.may_hold(hashes)
    if every and len(hashes) > 1:  # all the words are there: are they ever in one batch?
        again = archive_terms.load(archive, scope, filters=True)  # (maybe a newer file)
        if again is not None and again.covers(keys):
            every = again.one_batch_may_hold(hashes)
    return every, some


def _summarized(
    home: Path,
    user_id: str,
    thread_id: str,
    patterns: list[Pattern],
    hashes: list[int | None],
) -> _Thread | str:
    """The thread's summary and what may match, or why its log cannot be read (one line)."""
    try:
        directory = thread_dir(home, user_id, thread_id)
        summary = summarize(home, user_id, thread_id, directory)
    except ThreadNotFoundError:
        return "its log was removed (skipped)"
    except OSError as exc:
        return f"{LOG_NAME}: unreadable ({exc.strerror or exc}) (skipped)"
    count = held("\n".join(summary.folded), patterns)
    active = (count == len(patterns) and count > 0, count > 0)
    archive = archive_path(directory)
    scope = scope_binding(user_id, thread_id)
    return _Thread(summary, archive, active, _archive_may(summary, archive, scope, hashes))


@dataclass(frozen=True)
class _Query:
    """One `--all` search: whose threads, and what is asked of each."""

    home: Path
    user_id: str
    text: str
    role: str | None
    terms: list[fts.Term]
    patterns: list[Pattern]

    def counts(self, thread: _Thread) -> dict[str, int]:
        """Active source id -> how many terms it holds (found by pattern, once)."""
        if thread.counts is None:
            summary = thread.summary
            thread.counts = {
                s.source_id: held(folded, self.patterns)
                for s, folded in zip(summary.active, summary.folded, strict=True)
            }
        return thread.counts

    def store(self, thread: _Thread) -> ArchiveStore | None:
        """The thread's archive, opened read-only once (None: the line references none)."""
        if thread.store is None and thread.summary.scan.refs:
            thread.store = ArchiveStore(
                thread.archive,
                TaskContinuityConfig(),
                readonly=True,
                scope=scope_binding(self.user_id, thread.summary.thread),
            )
        return thread.store

    def open(self, thread: _Thread) -> HistoryView:
        """The thread's history view, exactly as its own `history_search` builds it.

        Only the active messages holding some term are handed to the view, with
        their counts (the view would tokenize each one).
        """
        if thread.view is None:
            counts = self.counts(thread)
            active = [s for s in thread.summary.active if counts[s.source_id]]
            store = self.store(thread)
            thread.view = HistoryView.open_scan(thread.summary.scan, active, store, Held(counts))
        return thread.view

    def holds_every(self, thread: _Thread) -> bool:
        """Whether some source of the thread may hold every term (the tool's first tier).

        Asks the archive for one such source only, in the batches the line
        references (a superset of those its view may read: the thread's own
        search decides), so a thread whose archive holds the words apart
        costs one cheap probe and no view.
        """
        if thread.active[0]:  # else no active message can hold them all
            counts = self.counts(thread)
            every = len(self.terms)
            if any(
                counts[s.source_id] == every and self.role in (None, s.role)
                for s in thread.summary.active
            ):
                return True
        store = self.store(thread)
        if store is None:
            return False
        try:
            referenced = [ref.batch for ref in thread.summary.scan.refs]
            hits = store.search(
                self.text, role=self.role, batch_ids=referenced, limit=1, partial=False
            )
        except ArchiveError:
            return True  # the thread's own search then reports the damage
        return bool(hits)

    def search(self, thread: _Thread) -> dict[str, Any]:
        """The thread's own `history_search` result."""
        if thread.result is None:
            thread.result = self.open(thread).search(self.text, self.role)
        return thread.result


def _close(threads: list[_Thread]) -> None:
    for thread in threads:
        if thread.store is not None:
            thread.store.close()


def _holds_all(result: dict[str, Any]) -> bool:
    """Whether the tool's result is of its first tier (a partial hit reads "some")."""
    return any(item["matched"] == "all" for item in result["results"])


def _group(summary: ThreadSummary, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "thread": summary.thread,
        "title": summary.title,
        "last_activity": summary.last_activity,
        **result,
    }


def search_all(
    home: Path,
    user_id: str,
    query: str,
    role: str | None = None,
    *,
    max_threads: int = MAX_THREADS,
    cancelled: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Every thread's `history_search` result that has hits, newest activity first.

    `{"query", "threads_searched", "threads_not_searched", "threads": [{"thread",
    "title", "last_activity", "status", "results", …}], "problems": [{"thread",
    "problem"}]}`. The tool's tiers hold across threads: when some thread
    holds every term, threads holding only some are left out. At most
    `max_threads` groups (0: no limit); the threads that might still have
    matched are counted in `threads_not_searched`. Invalid arguments give the
    tool's own `invalid_arguments` error.
    """
    args: dict[str, Any] = {"query": query}
    if role is not None:
        args["role"] = role
    checked = search_result(Snapshot([], [], "", None), args)  # the tool's own checks
    if checked.get("status") == "error":
        return checked
    with paused_gc():  # the summaries are many small objects that all stay alive
        return _search_all(home, user_id, query, role, max_threads, cancelled)


def _search_all(
    home: Path,
    user_id: str,
    query: str,
    role: str | None,
    max_threads: int,
    cancelled: Callable[[], bool] | None,
) -> dict[str, Any]:
    ids = thread_ids(home, user_id)
    terms = fts.query_terms(query)
    patterns = term_patterns(terms)
    hashes = [term_filter.term_hash(t) for t in terms]
    ask = _Query(home, user_id, query, role, terms, patterns)
    problems: dict[str, str] = {}
    order: list[_Thread] = []
    skipped = 0
    for thread_id in ids:
        if cancelled is not None and cancelled():
            break
        found = _summarized(home, user_id, thread_id, patterns, hashes)
        if isinstance(found, str):
            problems[thread_id] = found
            skipped += 1
        else:
            order.append(found)
            if found.summary.problem is not None:  # searched up to its bad line
                problems[thread_id] = f"{found.summary.problem} (searched the lines before it)"
    order.sort(key=lambda t: (t.summary.last_activity, t.summary.thread), reverse=True)
    limit = max_threads if max_threads > 0 else len(order)
    groups: list[_Thread] = []
    left = len(ids) - len(order) - skipped  # cancelled before summarizing them
    try:
        # The tool's tiers, across threads: threads holding every term; only when
        # none does, threads holding some (a one-term query has one tier).
        for every in (True, False) if len(terms) > 1 else (True,):
            if not terms or groups:
                break
            wanted = [t for t in order if t.may(every)]
            for at, thread in enumerate(wanted):
                if len(groups) >= limit or (cancelled is not None and cancelled()):
                    left += len(wanted) - at
                    break
                if every and len(terms) > 1 and not ask.holds_every(thread):
                    continue
                result = ask.search(thread)
                if result["results"] and (not every or _holds_all(result)):
                    groups.append(thread)
    finally:
        _close(order)
    for thread in order:
        status = thread.view.status if thread.view is not None else None
        if thread.result is not None:
            status = thread.result["status"]
        if status in DEGRADED:
            why = (thread.result or {}).get("reason")
            if why is None and thread.view is not None:
                why = thread.view.resolution.error
            also = f"history {status}: {why or STATUS_DETAIL[status]}"
            before = problems.get(thread.summary.thread)
            problems[thread.summary.thread] = f"{before}; {also}" if before else also
    listed = [{"thread": t, "problem": problems[t]} for t in sorted(problems)]
    return {
        "query": query,
        "threads_searched": len(ids) - left,
        "threads_not_searched": left,
        "threads": [_group(t.summary, t.result) for t in groups if t.result is not None],
        "problems": listed,
    }
