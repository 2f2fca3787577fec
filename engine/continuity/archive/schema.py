"""The archive file's schema, how an older file reaches it, and what a failure is called.

The version lives in `PRAGMA user_version`, the file's identity in `PRAGMA
application_id`. `MIGRATIONS` are ordered steps, each in its own `BEGIN IMMEDIATE`
transaction that re-reads the version, so racing writers serialize; a new file and
an old one reach the same schema by the same steps. Append steps, never edit one.

Version 1: `batches` (AUTOINCREMENT: an evicted batch's id is never reused),
`sources`, and one FTS5 table per batch made at capture. Version 2: `meta.scope`,
the user/thread binding (a version 1 file is adopted by the thread that migrates
it). Version 3: `term_filters`, one row per batch captured since; older batches
have none and are always asked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.errors import TroveError

APPLICATION_ID = 0x54524F56  # "TROV": marks the file as a Trove archive


class ArchiveError(TroveError):
    """Base of every archive failure; callers map it to a history status."""


class ArchiveUnavailableError(ArchiveError):
    """The archive cannot be read (corrupt, unreadable, foreign or newer schema)."""


class ArchiveScopeError(ArchiveUnavailableError):
    """The file is bound to another user or thread (e.g. copied from another thread)."""


class CaptureError(ArchiveError):
    """A capture did not happen; the previous batches are intact."""


def _create_tables(conn: sqlite3.Connection, scope: str | None) -> None:
    conn.execute(
        "CREATE TABLE batches ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " batch_key INTEGER NOT NULL UNIQUE,"
        " created TEXT NOT NULL,"
        " records INTEGER NOT NULL,"
        " omitted INTEGER NOT NULL,"
        " truncated INTEGER NOT NULL)"
    )
    conn.execute(
        "CREATE TABLE sources ("
        " id INTEGER PRIMARY KEY,"
        " batch_id INTEGER NOT NULL,"
        " source_id TEXT NOT NULL,"
        " role TEXT NOT NULL,"
        " seq INTEGER NOT NULL,"
        " truncated INTEGER NOT NULL,"
        " echo INTEGER NOT NULL,"
        " text TEXT NOT NULL)"
    )
    conn.execute("CREATE INDEX sources_by_batch ON sources(batch_id)")
    conn.execute("CREATE INDEX sources_by_source ON sources(source_id, batch_id)")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _add_scope_binding(conn: sqlite3.Connection, scope: str | None) -> None:
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    if scope is not None:
        conn.execute("INSERT INTO meta (key, value) VALUES ('scope', ?)", (scope,))


def _add_term_filters(conn: sqlite3.Connection, scope: str | None) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS term_filters (batch_id INTEGER PRIMARY KEY, bits BLOB NOT NULL)"
    )


@dataclass(frozen=True, slots=True)
class Migration:
    """One step: `apply(conn, scope)` takes a file from `version - 1` to `version`."""

    version: int
    apply: Callable[[sqlite3.Connection, str | None], None]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, _create_tables),
    Migration(2, _add_scope_binding),
    Migration(3, _add_term_filters),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


@dataclass(frozen=True, slots=True)
class SchemaState:
    """What a file's header says: its version and the scope it is bound to (None: unbound)."""

    version: int
    bound: str | None


def schema_state(conn: sqlite3.Connection, path: Path, scope: str | None) -> SchemaState | None:
    """The file's schema; None for an empty file; raises for a foreign or newer one.

    Any version up to ours is readable (a writer migrates it); a binding to
    another scope raises `ArchiveScopeError`. Read in one snapshot: outside a
    transaction every statement reads its own, and another store's first
    capture committing between them showed its tables under a header still
    zero, "not a Trove archive".
    """
    if conn.in_transaction:
        return _schema_state(conn, path, scope)
    conn.execute("BEGIN")
    try:
        return _schema_state(conn, path, scope)
    finally:
        conn.execute("ROLLBACK")  # it only read


def _schema_state(conn: sqlite3.Connection, path: Path, scope: str | None) -> SchemaState | None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    app = conn.execute("PRAGMA application_id").fetchone()[0]
    if version == 0 and app == 0:
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if tables == 0:
            return None
    if app != APPLICATION_ID or not 1 <= version <= SCHEMA_VERSION:
        raise ArchiveUnavailableError(
            f"{path}: not a Trove archive of schema {SCHEMA_VERSION} or older "
            f"(application_id {app}, user_version {version})"
        )
    bound = None
    if version >= 2:
        row = conn.execute("SELECT value FROM meta WHERE key = 'scope'").fetchone()
        bound = row[0] if row is not None else None
    if scope is not None and bound is not None and bound != scope:
        raise ArchiveScopeError(
            f"{path}: the archive belongs to another user or thread (it was copied here); "
            "it is not read"
        )
    return SchemaState(version, bound)


def migrate(conn: sqlite3.Connection, path: Path, scope: str | None) -> SchemaState:
    """Apply every step the file still lacks, in order, one transaction each.

    Each step checks the file again under the write lock (another writer may
    have just done it); a step that fails rolls back alone and raises, and the
    steps before it stay done.
    """
    for step in MIGRATIONS:
        conn.execute("BEGIN IMMEDIATE")
        try:
            state = schema_state(conn, path, scope)
            version = 0 if state is None else state.version
            if version < step.version:
                step.apply(conn, scope)
                conn.execute(f"PRAGMA user_version = {int(step.version)}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    state = schema_state(conn, path, scope)
    if state is None:  # cannot happen: the first step made the tables
        raise ArchiveUnavailableError(f"{path}: the schema was not created")
    return state
