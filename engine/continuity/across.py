"""`trove history search QUERY --all`: the user's search over every thread they own.

Only the user searches across threads; the model's tools stay scoped to their
own thread. Each thread is searched exactly as `history_search` searches it
(one `HistoryView` over its active messages and reachable batches), so every
group holds the same object the tool returns, plus which thread it is.

Nothing here writes a log or takes a thread's lock: logs are read (through
the summary cache, engine/thread_summary.py) and archives opened `mode=ro`,
so it works while other Trove processes hold any of the threads. A thread
whose log does not load is reported in one line and skipped; one whose
archive cannot be read is reported and still searched in its active
messages. Threads are searched in a small pool (SQLite releases the GIL).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from engine.config import TaskContinuityConfig
from engine.continuity import fts
from engine.continuity.context import Snapshot
from engine.continuity.records import Source
from engine.continuity.search import HistoryView
from engine.continuity.status import STATUS_DETAIL, scope_binding
from engine.continuity.store import ArchiveError, ArchiveStore, archive_path
from engine.continuity.tools import search_result
from engine.log import LogCorruptError
from engine.session import LOG_NAME, ThreadNotFoundError, thread_dir, user_dir
from engine.thread_summary import ThreadSummary, summarize

WORKERS = 4
DEGRADED = ("unavailable", "scope_unavailable")
T = TypeVar("T")


def thread_ids(home: Path, user_id: str) -> list[str]:
    """Every thread of this user that has a log (another user's directory is never read)."""
    root = user_dir(home, user_id) / "threads"
    try:
        children = list(root.iterdir())
    except OSError:
        return []
    return sorted(c.name for c in children if (c / LOG_NAME).is_file())


Pattern = tuple[str, re.Pattern[str]]


def _term_patterns(terms: list[fts.Term]) -> list[Pattern]:
    """Per term, a pattern that finds it in casefolded text exactly where a token would be.

    A word is a token only as a whole run of letters and digits (fts._TOKEN),
    so it needs a boundary each side; a CJK bigram is a token wherever it
    occurs, and a lone CJK character (a prefix term) starts one wherever it
    occurs. So this decides a match without tokenizing the text.
    """
    patterns: list[Pattern] = []
    for term in terms:
        text = re.escape(term.text)
        if "\u3400" <= term.text[0] <= "\u9fff":
            patterns.append((term.text, re.compile(text)))
        else:
            patterns.append((term.text, re.compile(f"(?<!{_WORD}){text}(?!{_WORD})")))
    return patterns


_WORD = r"[^\W_\u3400-\u9fff]"


def _candidates(
    active: list[Source], patterns: list[Pattern], role: str | None
) -> tuple[list[Source], bool]:
    """The active sources holding some term, and whether one holds every term.

    A plain substring test (C speed) rules most texts out before the
    boundary-checking pattern, which is ten times slower, is tried.
    """
    found: list[Source] = []
    every = False
    for source in active:
        folded = source.text.casefold()
        held = sum(1 for text, p in patterns if text in folded and p.search(folded))
        if held:
            found.append(source)
            every = every or (held == len(patterns) and (role is None or source.role == role))
    return found, every


@dataclass
class _Opened:
    """One thread, opened for searching: its summary and its history view."""

    summary: ThreadSummary
    view: HistoryView
    store: ArchiveStore | None
    holds_all: bool = False
    result: dict[str, Any] | None = None


def _open(
    home: Path, user_id: str, thread_id: str, patterns: list[Pattern], role: str | None
) -> _Opened | str:
    """The thread opened read-only, or why it cannot be (one line)."""
    try:
        summary = summarize(home, user_id, thread_id)
    except LogCorruptError as exc:
        return f"{LOG_NAME}:{exc.line}: {exc.problem} (skipped)"
    except ThreadNotFoundError:
        return "its log was removed (skipped)"
    except OSError as exc:
        return f"{LOG_NAME}: unreadable ({exc.strerror or exc}) (skipped)"
    store: ArchiveStore | None = None
    if summary.scan.refs:
        store = ArchiveStore(
            archive_path(thread_dir(home, user_id, thread_id)),
            TaskContinuityConfig(),
            readonly=True,
            scope=scope_binding(user_id, thread_id),
        )
    active, every = _candidates(summary.active, patterns, role)
    view = HistoryView.open_scan(summary.scan, active, store)
    return _Opened(summary, view, store, holds_all=every)


def _archive_holds_all(opened: _Opened, query: str, role: str | None) -> bool:
    """Whether some archived source of the thread holds every term (the tool's first tier)."""
    view = opened.view
    if view.store is None:
        return False
    try:
        hits = view.store.search(
            query, role=role, batch_ids=view.resolution.reachable, limit=1, partial=False
        )
    except ArchiveError:
        return True  # the tool's own search then reports the damage
    return bool(hits)


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
    workers: int = WORKERS,
    cancelled: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Every thread's `history_search` result that has hits, newest activity first.

    `{"query", "threads_searched", "threads": [{"thread", "title", "last_activity",
    "status", "results", …}], "problems": [{"thread", "problem"}]}`; invalid
    arguments give the tool's own `invalid_arguments` error.
    """
    args: dict[str, Any] = {"query": query}
    if role is not None:
        args["role"] = role
    checked = search_result(Snapshot([], [], "", None), args)  # the tool's own checks
    if checked.get("status") == "error":
        return checked
    ids = thread_ids(home, user_id)
    terms = fts.query_terms(query)
    patterns = _term_patterns(terms)
    opened: dict[str, _Opened] = {}
    problems: dict[str, str] = {}

    def first(thread_id: str) -> None:
        if cancelled is not None and cancelled():
            return
        found = _open(home, user_id, thread_id, patterns, role)
        if isinstance(found, str):
            problems[thread_id] = found
            return
        opened[thread_id] = found
        if len(terms) == 1:
            # One term: holding it is holding every term, so the thread's own
            # search decides at once (no probe first, no second pass).
            found.result = found.view.search(query, role)
            found.holds_all = bool(found.result["results"])
            return
        found.holds_all = bool(terms) and (
            found.holds_all or _archive_holds_all(found, query, role)
        )

    def second(thread: _Opened) -> None:
        if thread.result is None and (cancelled is None or not cancelled()):
            thread.result = thread.view.search(query, role)

    try:
        _each(first, ids, workers)
        # The tool's tiers, across threads: when some thread holds every term, threads
        # holding only some of them would be noise; else each thread's best partial hits.
        chosen = [t for t in opened.values() if t.holds_all]
        if not chosen and len(terms) > 1:
            chosen = list(opened.values())
        _each(second, chosen, workers)
    finally:
        for thread in opened.values():
            if thread.store is not None:
                thread.store.close()
    for thread_id, thread in opened.items():
        status = thread.view.status if thread.result is None else thread.result["status"]
        if status in DEGRADED:
            why = (thread.result or {}).get("reason") or thread.view.resolution.error
            problems[thread_id] = f"history {status}: {why or STATUS_DETAIL[status]}"
    groups = [
        _group(t.summary, t.result) for t in opened.values() if t.result and t.result["results"]
    ]
    groups.sort(key=lambda g: (g["last_activity"], g["thread"]), reverse=True)
    listed = [{"thread": t, "problem": problems[t]} for t in sorted(problems)]
    return {"query": query, "threads_searched": len(ids), "threads": groups, "problems": listed}


def _each(work: Callable[[T], None], items: list[T], workers: int) -> None:
    if len(items) > 1 and workers > 1:
        with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
            list(pool.map(work, items))
    else:
        for item in items:
            work(item)
