"""Archive edges: batches fail alone, scope lives in the file, read-only reads write nothing,
and a query may start with a dash."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from engine import events as ev
from engine.config import TaskContinuityConfig
from engine.continuity import ArchiveStore, CaptureError, Source, source_id
from engine.continuity.archive.status import archive_reference, scope_binding
from engine.continuity.archive.store import SCHEMA_VERSION, archive_path
from engine.continuity.batch_report import batch_sources, batches_report
from engine.continuity.context import Snapshot
from engine.continuity.search.view import HistoryView
from engine.log import SessionLog
from engine.threads.paths import LOG_NAME, thread_dir
from engine.workspace.reports import cli_notes, cli_read, cli_search
from tests.cli_support import Env, trove

SCOPE = scope_binding("local", "t1")
OTHER = scope_binding("local", "t2")


def rec(seq: int, text: str) -> Source:
    return Source(source_id("user", seq, text), "user", seq, text)


def fill(store: ArchiveStore, scope: str = SCOPE) -> list[dict[str, Any]]:
    """Three batches; every record holds 'common', each batch one word of its own."""
    events: list[ev.LogEvent] = []
    for batch in (1, 2, 3):
        records = [rec(batch * 10 + i, f"common word{batch} item{i}") for i in range(2)]
        result = store.capture(batch * 100, records)
        archive = archive_reference(result, scope)
        # as a log holds it: the compaction that started at the batch key ended here
        events.append(ev.CompactEnd(seq=len(events) + 1, start=batch * 100, archive=archive))
    return events


def damage(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(sql)
    conn.commit()
    conn.close()


# -- batches fail alone -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE fts_2",
        "UPDATE fts_2_data SET block = x'00ff00ff00ff00ff' WHERE id > 1",
        "UPDATE sources SET text = x'ff00' WHERE batch_id = 2",
    ],
    ids=["table gone", "index corrupt", "row text a blob"],
)
def test_a_damaged_batch_is_reported_and_the_others_are_still_searched(
    tmp_path: Path, sql: str
) -> None:
    path = tmp_path / "history.sqlite"
    writer = ArchiveStore(path, TaskContinuityConfig(), scope=SCOPE)
    events = fill(writer)
    writer.close()
    damage(path, sql)

    store = ArchiveStore(path, TaskContinuityConfig(), readonly=True, scope=SCOPE)
    result = HistoryView.open(events, SCOPE, [], store).search("common")
    batches = sorted({item["batch"] for item in result["results"]})
    assert batches == [1, 3]
    assert result["status"] == "unavailable"
    assert result["damaged_batches"] == [2]
    assert "batch 2" in result["reason"]

    view = HistoryView.open(events, SCOPE, [], store)
    assert view.search("word3")["results"][0]["batch"] == 3
    page = view.read(rec(10, "common word1 item0").source_id)
    assert page["text"] == "common word1 item0"
    store.close()


def test_a_missing_batch_table_is_reported_before_any_search(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    writer = ArchiveStore(path, TaskContinuityConfig(), scope=SCOPE)
    events = fill(writer)
    writer.close()
    damage(path, "DROP TABLE fts_3")
    store = ArchiveStore(path, TaskContinuityConfig(), readonly=True, scope=SCOPE)
    view = HistoryView.open(events, SCOPE, [], store)
    assert view.status == "unavailable"
    assert view.resolution.damaged == (3,)
    store.close()


# -- scope is bound inside the file --------------------------------------------------------------


def test_an_archive_copied_from_another_thread_reads_as_scope_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    theirs = ArchiveStore(path, TaskContinuityConfig(), scope=OTHER)
    fill(theirs, OTHER)
    theirs.close()
    # This thread's log references batches with the same ids and counts.
    ours = ArchiveStore(path, TaskContinuityConfig(), readonly=True, scope=SCOPE)
    events = [
        ev.CompactEnd(seq=1, archive={**ref, "scope": SCOPE})
        for ref in (
            {"batch": 1, "records": 2, "omitted_records": 0},
            {"batch": 2, "records": 2, "omitted_records": 0},
        )
    ]
    result = HistoryView.open(events, SCOPE, [], ours).search("common")
    assert result["status"] == "scope_unavailable"
    assert result["results"] == []
    ours.close()
    writer = ArchiveStore(path, TaskContinuityConfig(), scope=SCOPE)
    with pytest.raises(CaptureError, match="another"):
        writer.capture(999, [rec(1, "mine")])
    writer.close()


def test_a_version_1_archive_is_migrated_and_bound_by_its_next_capture(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    store = ArchiveStore(path, TaskContinuityConfig(), scope=SCOPE)
    events = fill(store)
    store.close()
    conn = sqlite3.connect(path)  # what a version 1 file looks like: no binding, no filters
    conn.execute("DROP TABLE meta")
    conn.execute("DROP TABLE term_filters")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()

    reader = ArchiveStore(path, TaskContinuityConfig(), readonly=True, scope=SCOPE)
    assert HistoryView.open(events, SCOPE, [], reader).search("word2")["status"] == "available"
    reader.close()

    writer = ArchiveStore(path, TaskContinuityConfig(), scope=SCOPE)
    writer.capture(400, [rec(99, "after the migration")])
    writer.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    assert conn.execute("SELECT value FROM meta WHERE key = 'scope'").fetchone()[0] == SCOPE
    assert conn.execute("SELECT count(*) FROM batches").fetchone()[0] == 4
    conn.close()


def test_a_version_2_archive_is_searched_before_and_after_its_migration(tmp_path: Path) -> None:
    """Batches captured before term filters existed are still found (they are always asked)."""
    path = tmp_path / "history.sqlite"
    store = ArchiveStore(path, TaskContinuityConfig(), scope=SCOPE)
    events = fill(store)
    store.close()
    conn = sqlite3.connect(path)  # what a version 2 file looks like: no term filters
    conn.execute("DROP TABLE term_filters")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()

    def found(store: ArchiveStore, query: str) -> list[str]:
        ids = [b.id for b in store.batches()]
        return sorted(h.source.text for h in store.search(query, batch_ids=ids))

    reader = ArchiveStore(path, TaskContinuityConfig(), readonly=True, scope=SCOPE)
    assert found(reader, "word2") == ["common word2 item0", "common word2 item1"]
    view = HistoryView.open(events, SCOPE, [], reader)
    assert view.search("word1 item1")["status"] == "available"
    reader.close()

    writer = ArchiveStore(path, TaskContinuityConfig(), scope=SCOPE)
    assert found(writer, "word3") == ["common word3 item0", "common word3 item1"]
    writer.capture(400, [rec(99, "after the migration word3")])
    assert found(writer, "word3") == [
        "after the migration word3",
        "common word3 item0",
        "common word3 item1",
    ]
    assert found(writer, "nowhere") == []
    writer.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    # only the batch captured after the migration has a filter
    assert [r[0] for r in conn.execute("SELECT batch_id FROM term_filters")] == [4]
    conn.close()


# -- read-only commands write nothing ---------------------------------------------------------


def make_thread(home: Path, thread_id: str = "t1") -> tuple[Path, str]:
    """A thread whose log references one archived batch, as a compaction leaves it."""
    directory = thread_dir(home, "local", thread_id)
    log = SessionLog.open(directory / LOG_NAME)
    log.append(ev.UserMessage(text="the -dash word lives here"))
    store = ArchiveStore(archive_path(directory), TaskContinuityConfig(), scope=SCOPE)
    record = rec(1, "an archived fact about zebras")
    result = store.capture(1, [record])
    store.close()
    log.append(ev.CompactEnd(start=1, archive=archive_reference(result, SCOPE)))
    log.close()
    return directory, record.source_id


def listing(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def test_read_only_commands_create_no_wal_or_shm(tmp_path: Path) -> None:
    home = tmp_path / "home"
    directory, source = make_thread(home)
    before = listing(directory)
    assert not any(name.endswith(("-wal", "-shm")) for name in before)

    assert cli_search(home, "local", "t1", "zebras")["results"][0]["id"] == source
    assert cli_read(home, "local", "t1", source)["text"] == "an archived fact about zebras"
    assert cli_notes(home, "local", "t1")["history"]["status"] == "available"
    assert listing(directory) == before


def test_a_read_only_store_sees_a_live_writer_and_adds_no_files(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    writer = ArchiveStore(path, TaskContinuityConfig(), scope=SCOPE)
    writer.capture(1, [rec(1, "first")])
    writer.close()
    reader = ArchiveStore(path, TaskContinuityConfig(), readonly=True, scope=SCOPE)
    assert [b.id for b in reader.batches()] == [1]
    assert sorted(os.listdir(tmp_path)) == ["history.sqlite", "history.terms"]  # the writer's

    writer.capture(2, [rec(2, "second")])  # reopens; its -wal now holds batch 2
    live = sorted(os.listdir(tmp_path))
    assert [b.id for b in reader.batches()] == [1, 2]
    assert sorted(os.listdir(tmp_path)) == live
    reader.close()
    writer.close()
    assert sorted(os.listdir(tmp_path)) == ["history.sqlite", "history.terms"]


# -- a query may start with a dash --------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["history", "search", "-dash", "--json"],
        ["history", "search", "--json", "--", "-dash"],
        ["history", "search", "--", "-dash"],
        ["history", "search", "-dash", "--thread", "t1", "--json"],
    ],
)
def test_a_query_starting_with_a_dash_is_a_query(env: Env, args: list[str]) -> None:
    make_thread(env.home)
    result = trove(*env.common, *args)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    if "--json" in args:
        found = json.loads(out)["results"]
        assert found and "-dash word" in found[0]["excerpt"]
    else:
        assert "-dash word" in out


def test_an_unknown_option_after_a_query_is_still_an_error(env: Env) -> None:
    make_thread(env.home)
    result = trove(*env.common, "history", "search", "word", "--bogus")
    assert result.returncode == 2
    assert "--bogus" in result.stderr and "Traceback" not in result.stderr


def test_listing_a_batch_with_a_damaged_row_names_the_batch(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    writer = ArchiveStore(path, TaskContinuityConfig(), scope=SCOPE)
    fill(writer)
    writer.close()
    damage(path, "UPDATE sources SET text = x'ff00' WHERE id = (SELECT min(id) FROM sources)")
    store = ArchiveStore(path, TaskContinuityConfig(), readonly=True, scope=SCOPE)
    assert [s.chars for s in store.sources(1)] == [len("common word1 item1")]
    assert 1 in store.damaged
    assert len(store.sources(2)) == 2 and 2 not in store.damaged
    store.close()


# -- the batch report ---------------------------------------------------------------------


def test_batch_report_states_and_sources_in_one_query(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    writer = ArchiveStore(path, TaskContinuityConfig(max_batches=2), scope=SCOPE)
    events = fill(writer)  # batch 1 is evicted by the third capture
    writer.close()
    store = ArchiveStore(path, TaskContinuityConfig(), readonly=True, scope=SCOPE)
    snapshot = Snapshot(events, [], SCOPE, store)
    report = batches_report(snapshot)
    assert report.status == "partially_expired"
    assert [(r.batch, r.state, r.records) for r in report.rows] == [
        (3, "reachable", 2),
        (2, "reachable", 2),
        (1, "expired", 2),
    ]
    assert report.rows[0].created.endswith("Z") and report.rows[2].truncated is None
    statements: list[str] = []
    assert store._conn is not None
    store._conn.set_trace_callback(statements.append)
    sources = batch_sources(snapshot, 3)
    store._conn.set_trace_callback(None)
    assert [(s.seq, s.text, s.batch) for s in sources] == [
        (30, "common word3 item0", 3),
        (31, "common word3 item1", 3),
    ]
    assert len([s for s in statements if "FROM sources" in s]) == 1
    store.close()
