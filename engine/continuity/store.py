"""The per-thread archive: compacted sources in SQLite, searchable through FTS5.

Layout (schema version 2, `PRAGMA user_version`; `MIGRATIONS` builds it
step by step, so a new file and an old one reach the same schema):

- `batches`: one row per capture (one successful compaction). Ids come from
  AUTOINCREMENT, so an evicted batch's id is never reused and an old log
  reference can never point at a newer batch.
- `sources`: one row per record: its text, role, seq, and the truncated and
  echo (continuity-tool traffic) flags.
- `fts_<batch id>`: a contentless FTS5 table per batch over the record's
  index text (see `fts.index_text`). Evicting a batch drops its table, which
  frees its pages at once, so eviction makes room inside the same transaction
  (a shared FTS table would only gain tombstones). Searching a batch is a
  query on its own table: a position that cannot reach a batch cannot query it
  (query.py holds the search itself).
- `meta` (version 2): `scope`, the user/thread binding (`status.scope_binding`)
  the file was made for. A file bound to another thread (a copied archive)
  reads as `ArchiveScopeError`, and no capture writes into it.

A batch fails alone: when one batch's FTS table or rows are unreadable, that
batch is recorded in `damaged` and every other batch is still searched and
read; the history view reports the damage in its status.

Every capture is one `BEGIN IMMEDIATE` transaction: competing captures (two
threads, two processes) serialize their retention decisions. Inside it, the
oldest batches are evicted first (to respect `max_batches`, then until the
estimated size fits under the page ceiling) and the new batch is inserted; if
SQLite still reports the ceiling (SQLITE_FULL) everything rolls back, the
previous batches stay, and `CaptureError` is raised.

Readers never create the file: a missing archive reads as empty.
A read-only store writes nothing either, not even `-wal`/`-shm`: when no
`-wal` exists, everything committed is in the main file, so it is opened
`immutable=1` (no lock, no shared memory) and each read checks afterwards that
the file did not change under it; otherwise, or when it did change, it is
opened `mode=ro`, which uses the `-wal`/`-shm` a live writer already has.
The class is synchronous; callers run it off the event loop
(`capture_offloaded` does that and drains the write on cancellation).
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from engine.config import TaskContinuityConfig
from engine.continuity import fts
from engine.continuity.extract import Record
from engine.continuity.query import ArchiveHit, fts_table, search_batches
from engine.offload import run_drained
from engine.private import private_dir, tighten, touch_private

MAX_PAGE_COUNT = 32768
APPLICATION_ID = 0x54524F56  # "TROV": marks the file as a Trove archive
BUSY_TIMEOUT_MS = 10_000
ARCHIVE_DIR = "task-history"
ARCHIVE_NAME = "history.sqlite"

# Size estimate for a new batch, in bytes of database pages. Measured: the
# sources b-tree costs about 1.1x the text, the FTS index (detail=full) 0.5x
# to 1.2x the index text (repetitive prose low, unique codes high). The
# factors err high: over-estimating evicts at most one batch early, while
# under-estimating would fail the capture at the ceiling.
_TEXT_FACTOR = 1.25
_INDEX_FACTOR = 1.5
_ROW_OVERHEAD = 96
_TABLE_PAGES = 16  # the FTS5 shadow tables and schema growth of a new batch
_HASH_BYTES = 64 * 2**20  # FTS5 in-memory hash for one capture (default 1 MB)


class ArchiveError(Exception):
    """Base of every archive failure; callers map it to a history status."""


class ArchiveUnavailableError(ArchiveError):
    """The archive cannot be read (corrupt, unreadable, foreign or newer schema)."""


class ArchiveScopeError(ArchiveUnavailableError):
    """The file is bound to another user or thread (e.g. copied from another thread)."""


class CaptureError(ArchiveError):
    """A capture did not happen; the previous batches are intact."""


@dataclass(frozen=True)
class CaptureResult:
    batch_id: int
    records: int
    omitted_records: int
    truncated_count: int
    duplicate: bool = False


@dataclass(frozen=True)
class BatchInfo:
    id: int
    batch_key: int
    created: str
    records: int
    omitted_records: int
    truncated_count: int


@dataclass(frozen=True)
class SourceSummary:
    source_id: str
    role: str
    seq: int
    chars: int
    truncated: bool


@dataclass(frozen=True)
class StoredSource:
    source_id: str
    role: str
    seq: int
    text: str
    truncated: bool
    batch_id: int
    echo: bool = False


def archive_path(thread_dir: Path) -> Path:
    """`<thread dir>/task-history/history.sqlite`, beside the session log."""
    return thread_dir / ARCHIVE_DIR / ARCHIVE_NAME


def _utcnow() -> datetime:
    return datetime.now(UTC)


_SCHEMA_V1 = f"""
CREATE TABLE batches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    batch_key INTEGER NOT NULL UNIQUE,
    created TEXT NOT NULL,
    records INTEGER NOT NULL,
    omitted INTEGER NOT NULL,
    truncated INTEGER NOT NULL
);
CREATE TABLE sources (
    id INTEGER PRIMARY KEY,
    batch_id INTEGER NOT NULL,
    source_id TEXT NOT NULL,
    role TEXT NOT NULL,
    seq INTEGER NOT NULL,
    truncated INTEGER NOT NULL,
    echo INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX sources_by_batch ON sources(batch_id);
CREATE INDEX sources_by_source ON sources(source_id, batch_id);
PRAGMA application_id = {APPLICATION_ID};
"""


def _create_tables(conn: sqlite3.Connection, scope: str | None) -> None:
    for statement in _SCHEMA_V1.split(";"):
        if statement.strip():
            conn.execute(statement)


def _add_scope_binding(conn: sqlite3.Connection, scope: str | None) -> None:
    """A v1 file is adopted by the thread whose writer migrates it (it sits in its directory)."""
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    if scope is not None:
        conn.execute("INSERT INTO meta (key, value) VALUES ('scope', ?)", (scope,))


# Step n takes a file from user_version n to n + 1, inside the capture's
# transaction; append new steps, never edit old ones.
MIGRATIONS: tuple[Callable[[sqlite3.Connection, str | None], None], ...] = (
    _create_tables,
    _add_scope_binding,
)
SCHEMA_VERSION = len(MIGRATIONS)


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
        self._lock = threading.RLock()

    # -- connection ------------------------------------------------------------

    def _connect(self, mode: str) -> sqlite3.Connection:
        uri = self.path.resolve().as_uri() + f"?mode={mode}"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return conn

    def _check_schema(self, conn: sqlite3.Connection) -> bool:
        """True when the schema exists; False for an empty file; raises for a foreign one.

        Any version up to ours is readable (a writer migrates it); a binding
        to another scope raises `ArchiveScopeError`.
        """
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        if version == 0 and app == 0:
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if tables == 0:
                return False
        if app != APPLICATION_ID or not 1 <= version <= SCHEMA_VERSION:
            raise ArchiveUnavailableError(
                f"{self.path}: not a Trove archive of schema {SCHEMA_VERSION} or older "
                f"(application_id {app}, user_version {version})"
            )
        self._version = version
        self._bound = None
        if version >= 2:
            row = conn.execute("SELECT value FROM meta WHERE key = 'scope'").fetchone()
            self._bound = row[0] if row is not None else None
        if self.scope is not None and self._bound is not None and self._bound != self.scope:
            raise ArchiveScopeError(
                f"{self.path}: the archive belongs to another user or thread "
                "(it was copied here); it is not read"
            )
        return True

    def _file_stamp(self) -> tuple[int, int, int] | None:
        """What changes when anyone writes the main file; None once a -wal exists."""
        if os.path.exists(f"{self.path}-wal"):
            return None
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return (info.st_ino, info.st_size, info.st_mtime_ns)

    def _read_mode(self) -> str:
        """`ro` plus `immutable=1` when no writer has a -wal (see the module docstring)."""
        self._stamp = None
        if not self.readonly:
            return "rw"
        if not self._shared:
            self._stamp = self._file_stamp()
            if self._stamp is not None:
                return "ro&immutable=1"
        return "ro"

    def _unchanged(self) -> bool:
        """After an immutable read: nothing wrote the file meanwhile, so the read was sound."""
        if self._stamp is None:
            return True
        if self._file_stamp() == self._stamp:
            return True
        self._shared = True  # a writer is about: use its -wal/-shm from now on
        self._drop()
        return False

    def _reader(self) -> sqlite3.Connection | None:
        """The open connection, or None when there is no archive file (never creates it)."""
        if self._conn is not None:
            return self._conn
        if not self.path.is_file():
            return None
        if not self.readonly:
            self._make_private()
        try:
            conn = self._connect(self._read_mode())
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
                touch_private(self.path)  # SQLite gives -wal and -shm this file's mode
                conn = self._connect("rwc")
                self._conn = conn
            self._ensure_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(f"PRAGMA max_page_count = {int(self.max_page_count)}")
        except (sqlite3.Error, OSError, ArchiveUnavailableError) as exc:
            self._drop()
            raise CaptureError(f"{self.path}: cannot open archive for writing: {exc}") from exc
        return conn

    def _make_private(self) -> None:
        """Tighten an archive an older version left readable, before SQLite opens it."""
        tighten(self.path.parent)
        for suffix in ("", "-wal", "-shm"):
            tighten(self.path.with_name(self.path.name + suffix))

    @staticmethod
    def _ensure_wal(conn: sqlite3.Connection) -> None:
        """Switch a new file to WAL; a competing writer doing the same may hold the lock.

        Changing the journal mode needs an exclusive lock and does not wait
        for it, so when two first captures race, the loser leaves the switch
        to the winner (its capture still serializes on BEGIN IMMEDIATE).
        """
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError:
            pass

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

    def capture(self, batch_key: int, records: Iterable[Record]) -> CaptureResult:
        """Archive one batch (the sources one compaction removed), idempotently.

        The same `batch_key` (the compaction's identity) returns the batch it
        already made, and protects it from the retention pass that runs for
        the duplicate. When there are more records than
        `max_records_per_batch`, the newest are kept: they are the ones the
        next turns are likeliest to need, and the summary had the whole span.
        """
        if isinstance(batch_key, bool) or not isinstance(batch_key, int):
            raise CaptureError(f"batch_key must be an int, got {batch_key!r}")
        items = list(records)
        if not all(isinstance(r, Record) for r in items):
            raise CaptureError("records must be Record instances from extract_records")
        limit = max(0, int(self.config.max_records_per_batch))
        kept = items[len(items) - limit :] if len(items) > limit else items
        omitted = len(items) - len(kept)
        kept = [r.cut(self.config.max_record_chars) for r in kept]
        truncated = sum(1 for r in kept if r.truncated)
        # Tokenize before taking the write lock: other writers need not wait for it.
        index = [fts.index_text(r.text) for r in kept]
        need = self._estimate_bytes(kept, index)
        with self._lock:
            conn = self._writer()
            try:
                conn.execute("BEGIN IMMEDIATE")
                if not self._initialized or self._version < SCHEMA_VERSION:
                    self._initialize(conn)
                elif self.scope is not None and self._bound is None:
                    self._bind(conn)
                row = conn.execute(
                    "SELECT id, records, omitted, truncated FROM batches WHERE batch_key = ?",
                    (batch_key,),
                ).fetchone()
                if row is not None:
                    self._retain(conn, keep=row[0], room_for=0, need_bytes=0)
                    conn.execute("COMMIT")
                    return CaptureResult(row[0], row[1], row[2], row[3], duplicate=True)
                self._retain(conn, keep=None, room_for=1, need_bytes=need)
                batch_id = self._insert(conn, batch_key, kept, index, omitted, truncated)
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
        return CaptureResult(batch_id, len(kept), omitted, truncated)

    def _abort(self, conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        # A failed write may leave the connection in any state: start afresh.
        self._drop()

    def _initialize(self, conn: sqlite3.Connection) -> None:
        """Create or migrate the schema inside the capture's transaction (races serialize on it)."""
        version = self._version if self._check_schema(conn) else 0
        for step in MIGRATIONS[version:]:
            step(conn, self.scope)
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._version = SCHEMA_VERSION
            self._bound = self.scope
        elif self.scope is not None and self._bound is None:
            self._bind(conn)
        self._initialized = True

    def _bind(self, conn: sqlite3.Connection) -> None:
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('scope', ?)", (self.scope,))
        self._bound = self.scope

    def _estimate_bytes(self, records: list[Record], index: list[str]) -> int:
        return math.ceil(
            sum(
                _TEXT_FACTOR * len(r.text.encode("utf-8"))
                + _INDEX_FACTOR * len(i.encode("utf-8"))
                + _ROW_OVERHEAD
                for r, i in zip(records, index, strict=True)
            )
        )

    def _free_pages(self, conn: sqlite3.Connection) -> int:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        return self.max_page_count - (pages - free)

    def _retain(
        self, conn: sqlite3.Connection, *, keep: int | None, room_for: int, need_bytes: int
    ) -> None:
        """Evict the oldest batches (never `keep`) until count and estimated size fit."""
        limit = max(1, int(self.config.max_batches))
        need_pages = 0
        if need_bytes:
            page = conn.execute("PRAGMA page_size").fetchone()[0]
            need_pages = math.ceil(need_bytes / page) + _TABLE_PAGES
        ids = [r[0] for r in conn.execute("SELECT id FROM batches ORDER BY id")]
        evictable = [i for i in ids if i != keep]
        count = len(ids)
        while evictable and count + room_for > limit:
            self._evict(conn, evictable.pop(0))
            count -= 1
        while evictable and need_pages and self._free_pages(conn) < need_pages:
            self._evict(conn, evictable.pop(0))

    def _evict(self, conn: sqlite3.Connection, batch_id: int) -> None:
        conn.execute("DELETE FROM sources WHERE batch_id = ?", (batch_id,))
        conn.execute(f"DROP TABLE IF EXISTS {fts_table(batch_id)}")
        conn.execute("DELETE FROM batches WHERE id = ?", (batch_id,))

    def _insert(
        self,
        conn: sqlite3.Connection,
        batch_key: int,
        records: list[Record],
        index: list[str],
        omitted: int,
        truncated: int,
    ) -> int:
        created = self.clock().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        cur = conn.execute(
            "INSERT INTO batches (batch_key, created, records, omitted, truncated) "
            "VALUES (?, ?, ?, ?, ?)",
            (batch_key, created, len(records), omitted, truncated),
        )
        batch_id = int(cur.lastrowid or 0)
        table = fts_table(batch_id)
        conn.execute(
            f"CREATE VIRTUAL TABLE {table} USING fts5("
            f"tokens, content='', tokenize='{fts.FTS_TOKENIZER}')"
        )
        # One segment per batch: with the default 1 MB hash a large batch is
        # flushed as several segments, and every query probes each of them.
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('hashsize', ?)", (_HASH_BYTES,))
        base = conn.execute("SELECT coalesce(max(id), 0) FROM sources").fetchone()[0] + 1
        conn.executemany(
            "INSERT INTO sources (id, batch_id, source_id, role, seq, truncated, echo, text) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    base + n,
                    batch_id,
                    r.source_id,
                    r.role,
                    r.seq,
                    int(r.truncated),
                    int(r.echo),
                    r.text,
                )
                for n, r in enumerate(records)
            ),
        )
        conn.executemany(
            f"INSERT INTO {table} (rowid, tokens) VALUES (?, ?)",
            ((base + n, text) for n, text in enumerate(index)),
        )
        return batch_id

    # -- reading ---------------------------------------------------------------

    def _read(self, work: Callable[[sqlite3.Connection], object], empty: object) -> object:
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
            names = self._tables[1]
            for batch_id in ids:
                if fts_table(batch_id) not in names:
                    self._mark(batch_id, f"its search index {fts_table(batch_id)} is missing")

        if ids:
            self._read(work, None)
        return {b: self.damaged[b] for b in ids if b in self.damaged}

    def batches(self) -> list[BatchInfo]:
        """Every batch still stored, oldest first (for the UI and the status layer)."""

        def work(conn: sqlite3.Connection) -> list[BatchInfo]:
            rows = conn.execute(
                "SELECT id, batch_key, created, records, omitted, truncated "
                "FROM batches ORDER BY id"
            )
            return [BatchInfo(*row) for row in rows]

        return self._read(work, [])  # type: ignore[return-value]

    def batch_records(self) -> dict[int, int]:
        """Stored batch id -> record count: what status resolution checks references against."""
        return {b.id: b.records for b in self.batches()}

    def sources(self, batch_id: int) -> list[SourceSummary]:
        """The records of one batch in capture order, without their text."""

        def work(conn: sqlite3.Connection) -> list[SourceSummary]:
            rows = conn.execute(
                "SELECT source_id, role, seq, '', truncated, batch_id, echo, length(text), "
                "typeof(text) FROM sources WHERE batch_id = ? ORDER BY id",
                (batch_id,),
            )
            out = []
            for row in rows:
                if row[8] == "text" and _sound(row[:7]):
                    out.append(SourceSummary(row[0], row[1], row[2], row[7], bool(row[4])))
                else:
                    self._mark(batch_id, f"a stored source is malformed ({row[0]!r:.40})")
            return out

        return self._read(work, [])  # type: ignore[return-value]

    def read(self, source_id: str, batch_ids: Iterable[int]) -> StoredSource | None:
        """The source with this exact id in one of `batch_ids` (newest batch wins)."""
        ids = sorted({int(b) for b in batch_ids}, reverse=True)
        if not ids:
            return None

        def work(conn: sqlite3.Connection) -> StoredSource | None:
            marks = ",".join("?" * len(ids))
            rows = conn.execute(
                "SELECT source_id, role, seq, text, truncated, batch_id, echo FROM sources "
                f"WHERE source_id = ? AND batch_id IN ({marks}) ORDER BY batch_id DESC",
                (source_id, *ids),
            )
            for row in rows:
                if _sound(row):
                    return StoredSource(
                        row[0], row[1], row[2], row[3], bool(row[4]), row[5], bool(row[6])
                    )
                self._mark(row[5], f"stored source {source_id} is malformed")
            return None

        return self._read(work, None)  # type: ignore[return-value]

    def available(self, source_ids: Iterable[str], batch_ids: Iterable[int]) -> set[str]:
        """Which of `source_ids` are stored in one of `batch_ids`."""
        wanted = sorted(set(source_ids))
        ids = sorted({int(b) for b in batch_ids})
        if not wanted or not ids:
            return set()

        def work(conn: sqlite3.Connection) -> set[str]:
            sid_marks = ",".join("?" * len(wanted))
            bid_marks = ",".join("?" * len(ids))
            rows = conn.execute(
                f"SELECT DISTINCT source_id FROM sources WHERE source_id IN ({sid_marks}) "
                f"AND batch_id IN ({bid_marks})",
                (*wanted, *ids),
            )
            return {row[0] for row in rows}

        return self._read(work, set())  # type: ignore[return-value]

    def search(
        self,
        query: str,
        *,
        role: str | None = None,
        batch_ids: Iterable[int],
        limit: int = 8,
        partial: bool = True,
    ) -> list[ArchiveHit]:
        """Hits for `query` in `batch_ids` only, through FTS5 (see `query.search_batches`).

        `partial=False` never returns sources holding only some of the terms
        (the caller already has sources holding all of them).
        """
        terms = fts.query_terms(query)
        ids = sorted({int(b) for b in batch_ids}, reverse=True)
        if not terms or not ids or limit <= 0:
            return []

        def work(conn: sqlite3.Connection) -> list[ArchiveHit]:
            usable = [b for b in ids if b not in self.damaged]
            return search_batches(
                conn, terms, usable, role=role, limit=limit, partial=partial, damaged=self._found
            )

        return self._read(work, [])  # type: ignore[return-value]


_ROW_TYPES = (str, str, int, str, int, int, int)


def _sound(row: tuple) -> bool:
    """A `sources` row whose columns have the types capture wrote (SQLite does not enforce them)."""
    return all(type(v) is t for v, t in zip(row, _ROW_TYPES, strict=True))


async def capture_offloaded(
    store: ArchiveStore, batch_key: int, records: Iterable[Record]
) -> CaptureResult:
    """Run `store.capture` in a worker thread; a cancellation waits for the write to end.

    The thread cannot be stopped mid-transaction, so cancelling the caller
    first drains the capture (committed or rolled back) and only then
    re-raises CancelledError: nothing writes to the archive after the
    cancellation has returned.
    """
    return await run_drained(store.capture, batch_key, list(records))
