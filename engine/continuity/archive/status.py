"""Which archived history a log position may see, and in what state it is.

Each successful compaction's `compact/end` carries the reference to the batch it
archived (or the capture failure) and the scope of the user and thread it was made
for. Resolution is a pure function of the events up to a position, the current
scope and the batches still stored, so every reader answers the same way:

- `uninitialized`: no compaction ever left an archive reference.
- `available`: every referenced batch is still stored.
- `partially_expired`: retention evicted some referenced batches.
- `unavailable`: a malformed reference, a failed newest capture (until a later one
  succeeds), an archive that cannot be opened, or a damaged reachable batch; older
  valid references can still be read.
- `scope_unavailable`: a reference or the archive file belongs to another user or
  thread (a copy); it grants nothing here.

Only references at or before the position are reachable, so a rewind never reveals
a later batch; a `session/fork` clears everything before it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeGuard

from msgspec import UNSET

from engine.continuity.archive.store import CaptureResult
from engine.events import CompactArchived, CompactEnd, LogEvent, SessionFork, UserMessage
from engine.threads.paths import THREAD_ID

HistoryStatus = Literal[
    "uninitialized", "available", "partially_expired", "unavailable", "scope_unavailable"
]
STATUSES: tuple[HistoryStatus, ...] = (
    "uninitialized",
    "available",
    "partially_expired",
    "unavailable",
    "scope_unavailable",
)

_SCOPE = re.compile(r"^[0-9a-f]{32}$")

STATUS_DETAIL: dict[str, str] = {
    "uninitialized": "nothing has been compacted yet; only the active history is searched",
    "available": "every compacted batch reachable from this point is stored",
    "partially_expired": (
        "some compacted batches expired under the retention limits; sources from them are "
        "gone and claims that cite them must be re-verified"
    ),
    "unavailable": (
        "the compacted history cannot be fully trusted (a capture failed, metadata is "
        "malformed, or the archive cannot be opened); re-verify anything you rely on"
    ),
    "scope_unavailable": (
        "part of this history was archived for another user or thread and cannot be read here"
    ),
}


def scope_binding(user_id: str, thread_id: str) -> str:
    """The first 32 hex of sha256(user NUL thread): what a reference is bound to."""
    return hashlib.sha256(f"{user_id}\0{thread_id}".encode()).hexdigest()[:32]


def archive_reference(result: CaptureResult, scope: str) -> dict[str, Any]:
    """The `archive` field of a successful compaction's `compact/end`."""
    return {
        "batch": result.batch_id,
        "scope": scope,
        "records": result.records,
        "omitted_records": result.omitted_records,
    }


def archive_failure(scope: str, error: str) -> dict[str, Any]:
    """The `archive` field of a successful compaction whose capture failed."""
    return {"status": "unavailable", "scope": scope, "error": str(error)}


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclass(frozen=True)
class ArchiveRef:
    batch: int
    scope: str
    records: int
    omitted_records: int
    seq: int
    start: int
    """The compaction's start seq: the batch key its capture used (see archive_terms)."""


@dataclass
class HistoryScan:
    """What the log says about the archive, before the store is consulted.

    Two kinds of compaction leave originals that are in no batch, and each
    keeps the status `unavailable` until that same compaction is archived
    again (`compact/archived`, written when the thread is next opened for
    writing, or after the next successful capture):

    - `failed`: the capture failed (start seq -> error); another batch's
      success does not bring these originals back, so it does not clear it;
    - `unarchived`: the checkpoint is in the log but its bracket never ended
      (a crash between the checkpoint and the archive write).

    `failure` is malformed reference metadata, which a later valid reference
    replaces.
    """

    refs: list[ArchiveRef] = field(default_factory=list)
    foreign: bool = False
    failure: str | None = None
    latest: ArchiveRef | None = None
    failed: dict[int, str] = field(default_factory=dict)
    unarchived: list[int] = field(default_factory=list)
    forked_from: str | None = None
    """The parent, when the log starts again at a fork (its archive is not read here)."""

    @property
    def initialized(self) -> bool:
        return bool(self.refs or self.foreign or self.failure or self.failed or self.unarchived)

    @property
    def lost(self) -> list[int]:
        """Compactions (by start seq) whose originals are in no batch, oldest first."""
        return sorted({*self.failed, *self.unarchived})

    @property
    def problem(self) -> str | None:
        """Why the status must be `unavailable` (None: no reason from the log)."""
        reasons = [self.failure] if self.failure else []
        reasons += [self.failed[start] for start in sorted(self.failed)]
        if self.unarchived:
            seqs = ", ".join(str(seq) for seq in self.unarchived)
            reasons.append(
                f"the compaction started at log seq {seqs} was interrupted before its "
                "originals were archived; they are archived again when the thread is next "
                "opened"
            )
        return "; ".join(dict.fromkeys(reasons)) or None


def _parse(archive: Any, seq: int, start: int) -> ArchiveRef | tuple[str, str] | None:
    """A valid reference, ("failed", scope) for a capture failure, or None when malformed."""
    if not isinstance(archive, Mapping):
        return None
    scope = archive.get("scope")
    if not isinstance(scope, str) or not _SCOPE.match(scope):
        return None
    if archive.get("status") == "unavailable" and "batch" not in archive:
        return ("failed", scope)
    batch = archive.get("batch")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        return None
    records, omitted = archive.get("records"), archive.get("omitted_records")
    if not _count(records) or not _count(omitted):
        return None
    return ArchiveRef(batch, scope, records, omitted, seq, start)


def scan_history(events: Iterable[LogEvent], scope: str) -> HistoryScan:
    """Fold the archive references of the events (already cut at the position)."""
    scan = HistoryScan()
    committed: list[int] = []
    closed: set[int] = set()
    for event in events:
        if isinstance(event, SessionFork):
            scan, committed, closed = HistoryScan(forked_from=event.from_thread), [], set()
            continue
        if isinstance(event, UserMessage):
            if event.checkpoint is not None and event.checkpoint.start is not None:
                committed.append(event.checkpoint.start)
            continue
        if not isinstance(event, CompactEnd | CompactArchived):
            continue
        seq = event.seq
        start = seq if event.start is None else event.start
        error = event.error if isinstance(event, CompactEnd) else None
        if error is not None or event.archive is UNSET:
            if isinstance(event, CompactEnd) and event.archive_error:
                scan.failed[start] = f"capture failed: {event.archive_error}"
            elif error is None:
                closed.add(start)  # task continuity was off: nothing was promised
            # A failed attempt whose checkpoint still got written (a "commit"
            # error after the line) stays unarchived: its originals are in no batch.
            continue
        closed.add(start)
        parsed = _parse(event.archive, seq, start)
        if parsed is None:
            scan.failure = "malformed archive reference metadata"
        elif isinstance(parsed, tuple):
            if parsed[1] == scope:
                why = event.archive.get("error")
                scan.failed[start] = f"capture failed: {why}" if why else "capture failed"
            else:
                scan.foreign = True
        elif parsed.scope != scope:
            scan.foreign = True
        else:
            scan.refs.append(parsed)
            scan.latest = parsed
            scan.failed.pop(start, None)  # this compaction's originals are archived now
            scan.failure = None  # a valid reference replaces malformed metadata
    scan.unarchived = [start for start in committed if start not in closed]
    return scan


@dataclass(frozen=True)
class Resolution:
    """A position's archive status and the batches it may read (newest first)."""

    status: HistoryStatus
    reachable: tuple[int, ...] = ()
    expired: tuple[int, ...] = ()
    error: str | None = None
    omitted_records: int | None = None
    damaged: tuple[int, ...] = ()
    """Reachable batches that cannot be fully read; the others still are."""

    def summary(self) -> dict[str, Any]:
        """The status as data for the model, the notebook message and the CLI."""
        out: dict[str, Any] = {"status": self.status, "detail": STATUS_DETAIL[self.status]}
        out["batches"] = len(self.reachable)
        if self.expired:
            out["expired_batches"] = len(self.expired)
        if self.omitted_records:
            out["omitted_records"] = self.omitted_records
        if self.damaged:
            out["damaged_batches"] = list(self.damaged)
        if self.error:
            out["reason"] = self.error
        return out


def resolve(
    events: Iterable[LogEvent],
    scope: str,
    stored: Mapping[int, int] | Collection[int] | None,
    store_error: str | None = None,
    *,
    keys: Mapping[int, int] | None = None,
) -> Resolution:
    """The status at the position the events end at.

    `stored` is what the store still holds: batch id -> record count (from
    `ArchiveStore.batch_records()`, which also catches an id that now names a
    different batch) or just the ids; None when the archive cannot be opened
    (`store_error` says why). `keys` (batch id -> batch key, from
    `ArchiveStore.batches()`) catches such an id for certain: a batch is the
    one a reference names only when its key is that compaction's start seq.
    """
    return resolve_scan(scan_history(events, scope), stored, store_error, keys=keys)


def fork_reason(parent: str | None) -> str | None:
    """Why a fork reads nothing archived before it: the parent keeps its archive.

    A fork copies messages and notes, never archive access (branch creation
    clears the parent's references); the parent's id is named only when it is
    a well-formed thread id, since the log line may be anything.
    """
    if parent is None:
        return None
    if not THREAD_ID.fullmatch(parent) or parent in (".", ".."):
        return "this thread is a fork of another thread; its archive stays with that thread"
    return (
        f"this thread is a fork of thread {parent}; what was compacted before the fork "
        f"stays in that thread's archive (history search --thread {parent} reads it)"
    )


def damage_reason(damaged: Mapping[int, str]) -> str:
    """One line naming the damaged batches, for the `reason` of a status."""
    ids = sorted(damaged)
    which = ", ".join(f"batch {b} ({damaged[b]})" for b in ids[:3])
    more = f" and {len(ids) - 3} more" if len(ids) > 3 else ""
    return f"damaged in the archive: {which}{more}; the other batches are still read"


def resolve_scan(
    scan: HistoryScan,
    stored: Mapping[int, int] | Collection[int] | None,
    store_error: str | None = None,
    *,
    damaged: Mapping[int, str] | None = None,
    foreign_archive: str | None = None,
    keys: Mapping[int, int] | None = None,
) -> Resolution:
    """`resolve` for an already folded scan (so the log is walked once).

    `damaged` names stored batches that cannot be fully read;
    `foreign_archive` says why the archive file is bound to another scope
    (nothing in it is reachable then). A reference is reached only when the
    batch under its id is its compaction's (`keys`; and its record count): an
    archive file made again (the old one deleted) numbers its batches from 1
    again, and the first new batch took the id an earlier reference names, so
    that earlier compaction's originals are gone (expired) however the newer
    reference to the same id resolves.
    """
    omitted = scan.latest.omitted_records if scan.latest is not None else None
    if not scan.initialized:
        return Resolution("uninitialized", error=fork_reason(scan.forked_from))
    if foreign_archive is not None:
        bound_elsewhere = tuple(dict.fromkeys(ref.batch for ref in reversed(scan.refs)))
        return Resolution("scope_unavailable", (), bound_elsewhere, foreign_archive, omitted)
    reachable: list[int] = []
    expired: list[int] = []
    seen: dict[int, int] = {}
    for ref in reversed(scan.refs):
        if ref.batch in seen:
            if seen[ref.batch] != ref.start and ref.batch not in expired:
                expired.append(ref.batch)  # the id names a later compaction's batch now
            continue
        seen[ref.batch] = ref.start
        present = stored is not None and ref.batch in stored
        if present and isinstance(stored, Mapping) and stored[ref.batch] != ref.records:
            present = False
        if present and keys is not None and keys.get(ref.batch) != ref.start:
            present = False
        (reachable if present else expired).append(ref.batch)
    if stored is None:
        why = store_error or "the archive cannot be opened"
        return Resolution("unavailable", (), tuple(expired), why, omitted)
    broken = {b: why for b, why in (damaged or {}).items() if b in reachable}
    error: str | None = scan.problem
    status: HistoryStatus
    if scan.problem is not None:
        status = "unavailable"
    elif broken:
        status, error = "unavailable", damage_reason(broken)
    elif scan.foreign:
        status = "scope_unavailable"
    elif expired:
        status = "partially_expired"
    else:
        status = "available"
    return Resolution(
        status, tuple(reachable), tuple(expired), error, omitted, tuple(sorted(broken))
    )
