"""One view of a position's history: the active messages plus the reachable archive.

`history_search`, `history_read`, citation checks, the injected notebook and
the CLI all go through `HistoryView`, so they agree on what exists. A view is
a snapshot: built from the events up to a position, the active surface
records (same extraction as capture) and the store. Building it may read the
archive, so callers on an event loop build and use it in a worker thread.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from engine.continuity.archive import fts
from engine.continuity.archive.extract import ROLES, OfferedMessage, extract_records, is_source_id
from engine.continuity.archive.records import AUTHORITY, Hit, Source
from engine.continuity.archive.status import (
    STATUS_DETAIL,
    HistoryScan,
    HistoryStatus,
    Resolution,
    damage_reason,
    resolve_scan,
    scan_history,
)
from engine.continuity.archive.store import ArchiveError, ArchiveScopeError, ArchiveStore
from engine.events import LogEvent

SEARCH_LIMIT = 8
EXCERPT_CHARS = 600
PAGE_CHARS = 4000
MAX_QUERY_CHARS = 2000


def error(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """A tool error as data (the same shape as `engine.tools.error_result`)."""
    return {"status": "error", "error": code, "message": message, **extra}


class ActiveIndex:
    """Token sets of active records, cached by source id.

    A source id names one exact text, so a cached entry can never go stale;
    the cache only saves re-tokenizing the active history on every search.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._sets: OrderedDict[str, frozenset[str]] = OrderedDict()
        self._lock = threading.Lock()

    def token_set(self, record: Source) -> frozenset[str]:
        with self._lock:
            found = self._sets.get(record.source_id)
            if found is not None:
                self._sets.move_to_end(record.source_id)
                return found
        made = frozenset(fts.tokens(record.text))
        with self._lock:
            self._sets[record.source_id] = made
            while len(self._sets) > self.capacity:
                self._sets.popitem(last=False)
        return made

    def matched(self, record: Source, terms: list[fts.Term]) -> int:
        """How many of the query's distinct terms the record holds."""
        return fts.matched_terms(terms, self.token_set(record))


class HistoryView:
    """What one position may see, with the tool operations over it."""

    def __init__(
        self,
        resolution: Resolution,
        active: list[Source],
        store: ArchiveStore | None,
        index: ActiveIndex | None = None,
    ) -> None:
        self.resolution = resolution
        self.active = active
        self.by_id = {r.source_id: r for r in active}
        self.store = store
        self.index = index or ActiveIndex()
        self._store_error: str | None = None

    @classmethod
    def open(
        cls,
        events: Iterable[LogEvent],
        scope: str,
        active: Iterable[OfferedMessage],
        store: ArchiveStore | None,
        index: ActiveIndex | None = None,
    ) -> HistoryView:
        """Resolve the status (consulting the store only when own references exist)."""
        return cls.open_scan(scan_history(events, scope), extract_records(active), store, index)

    @classmethod
    def open_scan(
        cls,
        scan: HistoryScan,
        active: list[Source],
        store: ArchiveStore | None,
        index: ActiveIndex | None = None,
    ) -> HistoryView:
        """`open` for an already folded scan and extracted sources (`trove history --all`)."""
        stored: dict[int, int] | None = {}
        keys: dict[int, int] | None = None
        problem: str | None = None
        foreign: str | None = None
        damaged: dict[int, str] = {}
        if scan.refs:
            if store is None:
                stored, problem = None, "task continuity is disabled, the archive is not open"
            elif not store.path.is_file():
                stored, problem = None, f"the archive file is missing: {store.path}"
            else:
                try:
                    batches = store.batches()
                    stored = {b.id: b.records for b in batches}
                    keys = {b.id: b.batch_key for b in batches}
                    damaged = store.check_batches(ref.batch for ref in scan.refs)
                except ArchiveScopeError as exc:
                    stored, foreign = None, str(exc)
                except ArchiveError as exc:
                    stored, problem = None, str(exc)
        resolution = resolve_scan(
            scan, stored, problem, damaged=damaged, foreign_archive=foreign, keys=keys
        )
        usable = store if stored is not None and resolution.reachable else None
        return cls(resolution, active, usable, index)

    def _damaged(self) -> dict[int, str]:
        """Reachable batches found damaged so far (at open, or by a later read)."""
        if self.store is None:
            return {}
        known = self.store.damaged
        return {b: known[b] for b in self.resolution.reachable if b in known}

    @property
    def status(self) -> HistoryStatus:
        if self._store_error is not None:
            return "unavailable"
        if self.resolution.status == "available" and self._damaged():
            return "unavailable"
        return self.resolution.status

    def _status_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status}
        if self.status != "available":
            out["detail"] = STATUS_DETAIL[self.status]
        if self.resolution.omitted_records:
            out["omitted_records"] = self.resolution.omitted_records
        damaged = self._damaged()
        if damaged:
            out["damaged_batches"] = sorted(damaged)
        error_text = self._store_error or self.resolution.error
        if damaged and (error_text is None or not self.resolution.damaged):
            error_text = damage_reason(damaged)
        if error_text:
            out["reason"] = error_text
        return out

    # -- search ----------------------------------------------------------------

    def search(self, query: str, role: str | None = None) -> dict[str, Any]:
        """The `history_search` result: at most 8 excerpts of 600 characters.

        Sources holding every query term (active history newest first, then
        the archive newest batch first). Only when no original holds every
        term: sources holding the most terms, newest first. Continuity-tool
        echoes (earlier searches, reads and notes: copies of other sources)
        follow the originals.
        """
        terms = fts.query_terms(query)
        result = self._status_fields()
        if not terms:
            result["results"] = []
            result["message"] = "the query has no searchable words or CJK characters"
            return _marked(result)
        buckets: dict[tuple[bool, bool], list[Hit]] = {
            (echo, every): [] for echo in (False, True) for every in (True, False)
        }
        for record in reversed(self.active):
            if role is not None and record.role != role:
                continue
            matched = self.index.matched(record, terms)
            if matched:
                every = matched == len(terms)
                buckets[(record.echo, every)].append(Hit(record, matched, every))
        archived: list[Hit] = []
        if self.store is not None and len(buckets[(False, True)]) < SEARCH_LIMIT:
            try:
                archived = self.store.search(
                    query,
                    role=role,
                    batch_ids=self.resolution.reachable,
                    limit=SEARCH_LIMIT,
                    partial=not buckets[(False, True)],
                )
            except ArchiveError as exc:
                self._store_error = str(exc)
            result = self._status_fields()  # the search may have found damage
        for found in archived:
            if found.source.source_id in self.by_id:
                continue  # the active copy is whole; prefer it
            buckets[(found.source.echo, found.every)].append(found)
        if buckets[(False, True)]:
            # Some original holds every term: partial matches would be noise.
            buckets[(False, False)] = []
            buckets[(True, False)] = []
        chosen: list[Hit] = []
        seen: set[str] = set()
        for echo in (False, True):
            partial = buckets[(echo, False)]
            partial.sort(key=lambda h: (h.matched, h.recency()), reverse=True)
            for hit in buckets[(echo, True)] + partial:
                if hit.source.source_id not in seen and len(chosen) < SEARCH_LIMIT:
                    seen.add(hit.source.source_id)
                    chosen.append(hit)
        result["results"] = [self._item(hit, query, terms, len(terms)) for hit in chosen]
        return _marked(result)

    def _item(self, hit: Hit, query: str, terms: list[fts.Term], total: int) -> dict[str, Any]:
        source = hit.source
        start, length = fts.match_position(source.text, query, terms)
        offset, text = fts.excerpt(source.text, start, length, EXCERPT_CHARS)
        return {
            "id": source.source_id,
            "role": source.role,
            "excerpt": text,
            "truncated": source.truncated,
            "origin": source.origin,
            "batch": source.batch,
            "seq": source.seq,
            "offset": offset,
            "chars": source.chars,
            "matched": "all" if hit.matched >= total else "some",
            "echo": source.echo,
        }

    # -- read ------------------------------------------------------------------

    def lookup(self, source_id: str) -> Source | None:
        """The source with this exact id: the active message first, then the archive."""
        record = self.by_id.get(source_id)
        if record is not None:
            return record
        if self.store is None:
            return None
        try:
            return self.store.read(source_id, self.resolution.reachable)
        except ArchiveError as exc:
            self._store_error = str(exc)
            return None

    def read(self, source_id: str, offset: int = 0) -> dict[str, Any]:
        """The `history_read` result: one 4,000-character page of the exact source."""
        source = self.lookup(source_id)
        if source is None:
            return error(
                "source_unavailable",
                f"no source {source_id} is reachable from this point of the thread",
                history=self._status_fields(),
            )
        if offset > source.chars:
            return error(
                "invalid_offset",
                f"offset {offset} is past the end of the source ({source.chars} characters)",
            )
        page = source.text[offset : offset + PAGE_CHARS]
        end = offset + len(page)
        out = self._status_fields()
        out.update(
            {
                "id": source.source_id,
                "role": source.role,
                "text": page,
                "offset": offset,
                "next_offset": end if end < source.chars else None,
                "truncated": source.truncated,
                "chars": source.chars,
                "origin": source.origin,
                "batch": source.batch,
                "seq": source.seq,
            }
        )
        return _marked(out)

    # -- citations -------------------------------------------------------------

    def citation_status(self, source_ids: Iterable[str]) -> dict[str, str]:
        """Whether each cited id can be read from here; why not, when it cannot.

        A missing id takes the history's own degraded status when there is
        one (it may have been in an expired, foreign or failed batch), and
        `unavailable` otherwise.
        """
        ids = [i for i in dict.fromkeys(source_ids) if isinstance(i, str)]
        out: dict[str, str] = {}
        missing = [i for i in ids if i not in self.by_id]
        stored: set[str] = set()
        if missing and self.store is not None:
            try:
                stored = self.store.available(
                    [i for i in missing if is_source_id(i)], self.resolution.reachable
                )
            except ArchiveError as exc:
                self._store_error = str(exc)
        fallback = self.status
        if fallback in ("available", "uninitialized"):
            fallback = "unavailable"
        for source in ids:
            out[source] = "available" if source in self.by_id or source in stored else fallback
        return out


def _marked(result: dict[str, Any]) -> dict[str, Any]:
    """A result that carries history text, with its authority, as every note has it:
    what the active history and the archive hold is a record of what was said
    (`model_report`), data and never instructions. Set last, after the results, so a
    one-line summary of the result still shows what was found; the CLI's `--json`
    prints the same object, so it carries the mark too."""
    result["authority"] = AUTHORITY
    return result


def parse_role(value: Any) -> str | None:
    """None (any role) or one of the source roles; raises ValueError otherwise."""
    if value is None or value == "":
        return None
    if value not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    return str(value)
