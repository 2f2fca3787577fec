"""The per-thread archive: compacted sources in SQLite, searchable through FTS5.

`ArchiveStore` owns one file and one connection; beside it are schema.py (tables,
version steps, errors), batch_writes.py (retention, a new batch's rows), reads.py
(sources back) and query.py (search). The file holds `batches`, `sources`,
`term_filters` and one contentless FTS5 table per batch, so a position that cannot
reach a batch cannot query it. A file bound to another thread reads as
`ArchiveScopeError` and takes no capture. A batch fails alone: an unreadable one is
recorded in `damaged` and the others are still searched.

Every capture is one `BEGIN IMMEDIATE` transaction, so competing captures serialize
their retention; at the page ceiling (SQLITE_FULL) it all rolls back and
`CaptureError` is raised. Readers never create the file, and a read-only store
writes nothing, not even `-wal`/`-shm` (file.py). Synchronous: callers run it off
the event loop (`capture_offloaded`). Over 400 lines as one class: capture and every
read share its one connection, its lock and its record of damage.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from engine.config import TaskContinuityConfig
from engine.continuity.archive import fts
from engine.continuity.archive import terms as archive_terms
from engine.continuity.archive.batch_writes import CaptureResult, prepare, write_batch
from engine.continuity.archive.file import (
    archive_path,
    connect,
    create,
    ensure_wal,
    file_stamp,
    make_private,
    present,
    read_mode,
)
from engine.continuity.archive.query import fts_table, search_batches
from engine.continuity.archive.reads import (
    BatchInfo,
    available_ids,
    list_batches,
    list_sources,
    read_source,
)
from engine.continuity.archive.records import Hit, Source
from engine.continuity.archive.schema import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    ArchiveError,
    ArchiveScopeError,
    ArchiveUnavailableError,
    CaptureError,
    migrate,
    schema_state,
)
from engine.util.offload import run_drained
from engine.util.private import private_dir

__all__ = [
    "APPLICATION_ID",
    "MAX_PAGE_COUNT",
    "SCHEMA_VERSION",
    "ArchiveError",
    "ArchiveScopeError",
    "ArchiveStore",
    "ArchiveUnavailableError",
    "BatchInfo",
    "CaptureError",
    "CaptureResult",
    "archive_path",
    "capture_offloaded",
]

MAX_PAGE_COUNT = 32768

T = TypeVar("T")


def _utcnow() -> datetime:
    return datetime.now(UTC)


class ArchiveStore:
    """One thread's archive file; thread-safe, one connection, opened lazily.

    `readonly=True` opens the file with `mode=ro` (the CLI); otherwise reads
    use a read-write connection that still never creates the file, and only
    `capture` creates it.
    """

    def __init__(
        self,
        path: Path,
        config: TaskContinuityConfig,
        *,
        readonly: bool = False,
        scope: str | None = None,
        max_page_count: int = MAX_PAGE_COUNT,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.path = Path(path)
        self.config = config
        self.readonly = readonly
        self.scope = scope
        self.max_page_count = max_page_count
        self.clock = clock
        self.damaged: dict[int, str] = {}
        """Batch id -> why it cannot be read; damage found by any read stays known."""
        self._conn: sqlite3.Connection | None = None
        self._initialized = False
        self._version = 0
        self._bound: str | None = None
        self._stamp: tuple[int, int, int] | None = None
        self._shared = False
        self._found: dict[int, str] = {}
        self._tables: tuple[int, frozenset[str]] = (-1, frozenset())
        self._filters: dict[int, bytes] = {}
        """Batch id -> its term filter (immutable once written), read once per batch."""
        self._lock = threading.RLock()

    # -- connection ------------------------------------------------------------

    def _check_schema(self, conn: sqlite3.Connection) -> bool:
        """True when the schema exists; False for an empty file; raises for a foreign one."""
        state = schema_state(conn, self.path, self.scope)
        if state is None:
            return False
        self._version, self._bound = state.version, state.bound
        return True

    def _unchanged(self) -> bool:
        """After an immutable read: nothing wrote the file meanwhile, so the read was sound."""
        if self._stamp is None:
            return True
        if file_stamp(self.path) == self._stamp:
            return True
        self._shared = True  # a writer is about: use its -wal/-shm from now on
        self._drop()
        return False

    def _reader(self) -> sqlite3.Connection | None:
        """The open connection, or None when there is no archive file (never creates it)."""
        if self._conn is not None:
            return self._conn
        if not present(self.path):  # raises for a FIFO, a device, a link to one or to nothing
            return None
        if not self.readonly:
            make_private(self.path)
        try:
            mode, self._stamp = read_mode(self.path, readonly=self.readonly, shared=self._shared)
            conn = connect(self.path, mode)
            try:
                self._initialized = self._check_schema(conn)
            except BaseException:
                conn.close()
                raise
        except sqlite3.Error as exc:
            raise ArchiveUnavailableError(f"{self.path}: cannot open archive: {exc}") from exc
        self._conn = conn
        return conn

    def _writer(self) -> sqlite3.Connection:
        if self.readonly:
            raise CaptureError(f"{self.path}: archive opened read-only")
        try:
            conn = self._reader()
            if conn is None:
                private_dir(self.path.parent)
                archive_terms.remove(self.path)  # it described an earlier file
                # Made whole, then linked into place, or a competing writer's is found
                # there: opened either way. SQLite gives -wal and -shm this file's mode.
                create(self.path, self.scope)
                conn = self._reader()
                if conn is None:
                    raise ArchiveUnavailableError(f"{self.path}: removed as it was made")
            ensure_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(f"PRAGMA max_page_count = {int(self.max_page_count)}")
        except (sqlite3.Error, OSError, ArchiveUnavailableError) as exc:
            self._drop()
            raise CaptureError(f"{self.path}: cannot open archive for writing: {exc}") from exc
        return conn

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None
                self._initialized = False

    def close(self) -> None:
        """Close the connection; the store reopens on the next call."""
        with self._lock:
            self._drop()

    def __enter__(self) -> ArchiveStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- capture ---------------------------------------------------------------

    def capture(self, batch_key: int, records: Iterable[Source]) -> CaptureResult:
        """Archive one batch (the sources one compaction removed), idempotently.

        The same `batch_key` (the compaction's identity) with the same records
        returns the batch it already made, and protects it from the retention
        pass that runs for the duplicate; other records under a key in use are
        another compaction's, and get a batch of their own (see
        `batch_writes.write_batch`). When there are more records than
        `max_records_per_batch`, the newest are kept (see `batch_writes.prepare`).
        """
        if isinstance(batch_key, bool) or not isinstance(batch_key, int):
            raise CaptureError(f"batch_key must be an int, got {batch_key!r}")
        items = list(records)
        if not all(isinstance(r, Source) for r in items):
            raise CaptureError("records must be Source instances from extract_records")
        batch = prepare(
            items,
            max_records=self.config.max_records_per_batch,
            max_chars=self.config.max_record_chars,
        )
        with self._lock:
            conn = self._writer()
            try:
                if not self._initialized or self._version < SCHEMA_VERSION:
                    state = migrate(conn, self.path, self.scope)
                    self._version, self._bound = state.version, state.bound
                    self._initialized = True
                conn.execute("BEGIN IMMEDIATE")
                if self.scope is not None and self._bound is None:
                    self._bind(conn)
                result, hashed = write_batch(
                    conn,
                    batch,
                    batch_key=batch_key,
                    created=self.clock().strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    max_batches=self.config.max_batches,
                    max_page_count=self.max_page_count,
                )
                terms = None if result.duplicate else self._archive_terms(conn, result, hashed)
                conn.execute("COMMIT")
            except ArchiveUnavailableError as exc:
                self._abort(conn)
                raise CaptureError(str(exc)) from exc
            except sqlite3.Error as exc:
                self._abort(conn)
                full = getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL"
                what = "archive is full (page ceiling reached)" if full else str(exc)
                raise CaptureError(f"{self.path}: capture rolled back: {what}") from exc
            except BaseException:
                self._abort(conn)
                raise
            if terms is not None:
                archive_terms.write(self.path, terms)
        return result

    def _archive_terms(
        self, conn: sqlite3.Connection, result: CaptureResult, hashed: list[int]
    ) -> bytes | None:
        """The archive's new `history.terms` (written after the commit); None: leave it be.

        Only an accelerator for `--all`, so nothing about it can fail a capture:
        an old file that cannot be replaced stays true (archive_terms.py).
        """
        scope = self.scope or self._bound
        if scope is None:
            return None
        try:
            return archive_terms.after_capture(conn, self.path, scope, result.batch_id, hashed)
        except (sqlite3.Error, OSError, ValueError):
            return None

    def _abort(self, conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        # A failed write may leave the connection in any state: start afresh.
        self._drop()

    def _bind(self, conn: sqlite3.Connection) -> None:
        """Bind a file made without a scope to this one (the writer's thread adopts it)."""
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('scope', ?)", (self.scope,))
        self._bound = self.scope

    # -- reading ---------------------------------------------------------------

    def _read(self, work: Callable[[sqlite3.Connection], T], empty: T) -> T:
        """Run a read; a missing or empty archive gives `empty`, a broken one raises.

        Batch damage the work finds goes to `self._found`, and is kept only
        when the read was sound (an immutable read the file changed under is
        done again through the writer's -wal).
        """
        with self._lock:
            while True:
                self._found = {}
                conn = self._reader()
                if conn is None:
                    return empty
                try:
                    if not self._initialized:
                        # An empty file may have been initialized by a writer since.
                        self._initialized = self._check_schema(conn)
                    result = work(conn) if self._initialized else empty
                except sqlite3.Error as exc:
                    if not self._unchanged():
                        continue
                    self._drop()
                    raise ArchiveUnavailableError(
                        f"{self.path}: cannot read archive: {exc}"
                    ) from exc
                if self._unchanged():
                    self.damaged.update(self._found)
                    return result

    def _mark(self, batch_id: int, problem: object) -> None:
        self._found.setdefault(batch_id, str(problem))

    def check_batches(self, batch_ids: Iterable[int]) -> dict[int, str]:
        """Which of `batch_ids` are known damaged; a missing FTS table is found here, cheaply.

        The table names come from the schema SQLite already holds in memory,
        so this costs no page reads of the batches themselves.
        """
        ids = sorted({int(b) for b in batch_ids})

        def work(conn: sqlite3.Connection) -> None:
            version = conn.execute("PRAGMA schema_version").fetchone()[0]
            if self._tables[0] != version:  # the names change only with the schema
                names = conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'fts_%'"
                )
                self._tables = (version, frozenset(row[0] for row in names))
            tables = self._tables[1]
            for batch_id in ids:
                if fts_table(batch_id) not in tables:
                    self._mark(batch_id, f"its search index {fts_table(batch_id)} is missing")

        if ids:
            self._read(work, None)
        return {b: self.damaged[b] for b in ids if b in self.damaged}

    def batches(self) -> list[BatchInfo]:
        """Every batch still stored, oldest first (for the UI and the status layer)."""
        return self._read(list_batches, [])

    def batch_records(self) -> dict[int, int]:
        """Stored batch id -> record count: what status resolution checks references against."""
        return {b.id: b.records for b in self.batches()}

    def sources(self, batch_id: int) -> list[Source]:
        """The sources of one batch in capture order, with their text, in one query."""
        return self._read(lambda conn: list_sources(conn, batch_id, self._mark), [])

    def read(self, source_id: str, batch_ids: Iterable[int]) -> Source | None:
        """The source with this exact id in one of `batch_ids` (newest batch wins)."""
        ids = sorted({int(b) for b in batch_ids}, reverse=True)
        if not ids:
            return None
        return self._read(lambda conn: read_source(conn, source_id, ids, self._mark), None)

    def available(self, source_ids: Iterable[str], batch_ids: Iterable[int]) -> set[str]:
        """Which of `source_ids` are stored in one of `batch_ids`."""
        wanted = sorted(set(source_ids))
        ids = sorted({int(b) for b in batch_ids})
        if not wanted or not ids:
            return set()
        return self._read(lambda conn: available_ids(conn, wanted, ids), set())

    def search(
        self,
        query: str,
        *,
        role: str | None = None,
        batch_ids: Iterable[int],
        limit: int = 8,
        partial: bool = True,
    ) -> list[Hit]:
        """Hits for `query` in `batch_ids` only, through FTS5 (see `query.search_batches`).

        `partial=False` never returns sources holding only some of the terms
        (the caller already has sources holding all of them).
        """
        terms = fts.query_terms(query)
        ids = sorted({int(b) for b in batch_ids}, reverse=True)
        if not terms or not ids or limit <= 0:
            return []

        def work(conn: sqlite3.Connection) -> list[Hit]:
            usable = [b for b in ids if b not in self.damaged]
            return search_batches(
                conn,
                terms,
                usable,
                role=role,
                limit=limit,
                partial=partial,
                damaged=self._found,
                filters=self._filters,
            )

        return self._read(work, [])


async def capture_offloaded(
    store: ArchiveStore, batch_key: int, records: Iterable[Source]
) -> CaptureResult:
    """Run `store.capture` in a worker thread; a cancellation waits for the write to end
    (committed or rolled back), so nothing writes to the archive after it returns."""
    return await run_drained(store.capture, batch_key, list(records))
