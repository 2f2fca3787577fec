"""The archive store: capture, retention, failure, search and read through FTS5."""

from __future__ import annotations

import asyncio
import os
import random
import re
import sqlite3
import threading
from pathlib import Path

import pytest

from engine.config import TaskContinuityConfig
from engine.continuity import (
    ArchiveStore,
    ArchiveUnavailableError,
    CaptureError,
    Source,
    capture_offloaded,
    source_id,
)
from engine.continuity.archive import schema
from engine.continuity.archive.store import APPLICATION_ID, SCHEMA_VERSION


def rec(seq: int, text: str, role: str = "user") -> Source:
    return Source(source_id(role, seq, text), role, seq, text)


def words(rng: random.Random, n_chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_chars:
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:n_chars]


def cfg(**kw) -> TaskContinuityConfig:
    return TaskContinuityConfig(**kw)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "thread" / "task-history" / "history.sqlite"


def test_readers_never_create_the_archive(path: Path) -> None:
    for readonly in (False, True):
        store = ArchiveStore(path, cfg(), readonly=readonly)
        assert store.batches() == []
        assert store.batch_records() == {}
        assert store.search("anything", batch_ids=[1, 2]) == []
        assert store.read("r" + "0" * 32, [1]) is None
        assert store.available(["r" + "0" * 32], [1]) == set()
        assert store.sources(1) == []
        store.close()
    assert not path.exists() and not path.parent.exists()


def test_exact_latin_code_and_cjk_phrase_are_found_and_read_back(path: Path) -> None:
    store = ArchiveStore(path, cfg())
    code = rec(3, "The vault code is ZX-4471-QV, do not lose it.")
    phrase = rec(4, "备注：蓝色钥匙在第三个抽屉里。", role="assistant")
    other = rec(5, "nothing to see here 第三方")
    result = store.capture(10, [code, phrase, other])
    assert result.records == 3 and result.omitted_records == 0 and result.truncated_count == 0

    [hit] = store.search("ZX-4471-QV", batch_ids=[result.batch_id])
    assert hit.source.source_id == code.source_id and hit.every
    hits = store.search("蓝色钥匙在第三个抽屉", batch_ids=[result.batch_id])
    assert hits[0].source.source_id == phrase.source_id and hits[0].every
    assert all(h.source.source_id != other.source_id or not h.every for h in hits)
    # a lone character is a prefix over the bigrams
    assert phrase.source_id in {h.source.source_id for h in store.search("抽", batch_ids=[1])}

    stored = store.read(phrase.source_id, [result.batch_id])
    assert stored is not None and stored.text == phrase.text and stored.role == "assistant"
    assert store.read(phrase.source_id, []) is None
    store.close()


def test_fts_syntax_in_a_query_is_data(path: Path) -> None:
    """FTS5 operators in a query are searched as the words they are: no syntax error, no
    column filter, no NOT/OR/prefix semantics; a query of operators alone finds nothing."""
    store = ArchiveStore(path, cfg())
    parser = rec(1, 'he said " OR * NOT NEAR( x ) to the parser')
    plain = rec(2, "column x and a caret")
    store.capture(1, [parser, plain])
    expected = {
        '" OR * NOT NEAR( x )': {(parser.source_id, True)},
        "NEAR(": {(parser.source_id, True)},  # the word, not an unclosed NEAR group
        "NOT": {(parser.source_id, True)},  # the word, not a bare operator
        '"': set(),  # no words: nothing to search, not an unterminated string
        "*": set(),
        "a AND": {(plain.source_id, True)},  # the words "a" and "and", not a dangling AND
        "col:x": {(plain.source_id, False), (parser.source_id, False)},  # not a column filter
        "^x": {(plain.source_id, True), (parser.source_id, True)},  # not an initial-token anchor
        "-x": {(plain.source_id, True), (parser.source_id, True)},  # not NOT x
        "parser OR nothing": {(parser.source_id, False)},  # "or" is a term: a partial match
    }
    for query, hits in expected.items():
        found = {(h.source.source_id, h.every) for h in store.search(query, batch_ids=[1])}
        assert found == hits, query
    store.close()


def test_search_sees_only_the_given_batches_and_role(path: Path) -> None:
    store = ArchiveStore(path, cfg())
    first = store.capture(1, [rec(1, "alpha marker"), rec(2, "alpha reply", role="assistant")])
    second = store.capture(2, [rec(3, "alpha later")])
    assert {h.source.batch for h in store.search("alpha", batch_ids=[first.batch_id])} == {1}
    both = store.search("alpha", batch_ids=[1, 2])
    assert both[0].source.batch == second.batch_id  # all-term hits: newest batch first
    assert [h.source.role for h in store.search("alpha", role="assistant", batch_ids=[1, 2])] == [
        "assistant"
    ]
    assert store.search("alpha", batch_ids=[99]) == []
    store.close()


def test_partial_matches_only_when_no_source_holds_every_term(path: Path) -> None:
    store = ArchiveStore(path, cfg())
    store.capture(1, [rec(1, "deploy script for staging"), rec(4, "staging deploy rollback")])
    store.capture(2, [rec(2, "deploy only"), rec(3, "unrelated")])
    hits = store.search("deploy staging", batch_ids=[1, 2])
    assert [(h.source.seq, h.every) for h in hits] == [(1, True), (4, True)] or [
        (h.source.seq, h.every) for h in hits
    ] == [(4, True), (1, True)]
    partial = store.search("deploy staging rollback", batch_ids=[1, 2])
    assert [(h.source.seq, h.every) for h in partial] == [(4, True)]
    some = store.search("deploy unrelated", batch_ids=[1, 2])
    assert {h.source.seq for h in some} == {1, 2, 3, 4} and not any(h.every for h in some)
    assert store.search("deploy unrelated", batch_ids=[1, 2], partial=False) == []
    store.close()


def test_truncation_and_omitted_records(path: Path) -> None:
    store = ArchiveStore(path, cfg(max_records_per_batch=3, max_record_chars=10))
    records = [rec(i, f"record number {i} " + "x" * i) for i in range(1, 6)]
    result = store.capture(1, records)
    assert (result.records, result.omitted_records, result.truncated_count) == (3, 2, 3)
    kept = store.sources(result.batch_id)
    assert [s.seq for s in kept] == [3, 4, 5]  # the newest records are kept
    assert all(s.truncated and s.chars == 10 for s in kept)
    stored = store.read(records[4].source_id, [1])
    assert stored.truncated and stored.text == records[4].text[:10]
    [info] = store.batches()
    assert (info.records, info.omitted_records, info.truncated_count) == (3, 2, 3)
    store.close()


def test_max_batches_evicts_oldest_and_ids_are_never_reused(path: Path) -> None:
    store = ArchiveStore(path, cfg(max_batches=2))
    ids = [store.capture(key, [rec(key, f"text {key}")]).batch_id for key in (1, 2, 3)]
    assert ids == [1, 2, 3]
    assert [b.id for b in store.batches()] == [2, 3]
    assert store.read(rec(1, "text 1").source_id, [1, 2, 3]) is None
    assert store.capture(4, [rec(4, "text 4")]).batch_id == 4
    assert [b.id for b in store.batches()] == [3, 4]
    # the evicted batch's FTS table is gone with it
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert "fts_1" not in tables and "fts_2" not in tables and "fts_4" in tables
    store.close()


def test_duplicate_capture_is_idempotent_and_protected(path: Path) -> None:
    store = ArchiveStore(path, cfg())
    first = store.capture(7, [rec(1, "one")])
    again = store.capture(7, [rec(1, "one")])
    assert again.batch_id == first.batch_id and again.duplicate and again.records == 1
    store.capture(8, [rec(3, "three")])
    store.capture(9, [rec(4, "four")])
    store.close()
    lowered = ArchiveStore(path, cfg(max_batches=1))
    dup = lowered.capture(8, [rec(3, "three")])
    assert dup.duplicate and dup.batch_id == 2
    assert [b.id for b in lowered.batches()] == [2]
    assert lowered.read(rec(3, "three").source_id, [2]) is not None
    assert lowered.capture(10, [rec(5, "five")]).batch_id == 4
    assert [b.id for b in lowered.batches()] == [4]
    lowered.close()


def test_a_key_reused_with_other_records_gets_a_batch_of_its_own(path: Path) -> None:
    """A compaction in a part of the log that was set aside (a quarantine) left a batch
    under its start seq; the log hands that seq out again, to a new compaction. Its
    capture is not that batch's duplicate: its own originals are archived and found,
    and the old batch is kept, under a key no compaction has."""
    store = ArchiveStore(path, cfg())
    old = store.capture(7, [rec(3, "the set aside ALPHA-1")])
    new = store.capture(7, [rec(3, "the new BRAVO-2"), rec(4, "and more")])
    assert not new.duplicate and new.batch_id != old.batch_id and new.records == 2
    assert [h.source.text for h in store.search("BRAVO-2", batch_ids=[new.batch_id])] == [
        "the new BRAVO-2"
    ]
    keys = {b.id: b.batch_key for b in store.batches()}
    assert keys == {old.batch_id: -old.batch_id, new.batch_id: 7}
    assert store.read(rec(3, "the set aside ALPHA-1").source_id, [old.batch_id]) is not None
    again = store.capture(7, [rec(3, "the new BRAVO-2"), rec(4, "and more")])
    assert again.duplicate and again.batch_id == new.batch_id
    store.close()


def test_page_ceiling_evicts_oldest_batches_to_make_room(path: Path) -> None:
    rng = random.Random(3)
    store = ArchiveStore(path, cfg(), max_page_count=400)
    for key in range(1, 13):
        store.capture(key, [rec(key * 100 + i, words(rng, 1500)) for i in range(40)])
    ids = [b.id for b in store.batches()]
    assert 1 < len(ids) < 12
    assert ids == list(range(13 - len(ids), 13))  # the newest, contiguous
    conn = store._conn
    assert conn.execute("PRAGMA page_count").fetchone()[0] <= 400
    store.close()


def test_sqlite_full_rolls_back_and_keeps_previous_batches(path: Path) -> None:
    rng = random.Random(4)
    store = ArchiveStore(path, cfg(), max_page_count=64)
    small = rec(1, "small batch keeps ZX-1")
    store.capture(1, [small])
    huge = [rec(100 + i, words(rng, 4000)) for i in range(80)]  # far over 64 pages
    with pytest.raises(CaptureError, match="full"):
        store.capture(2, huge)
    assert [b.batch_key for b in store.batches()] == [1]
    assert store.read(small.source_id, [1]).text == small.text
    assert store.search("ZX-1", batch_ids=[1])[0].source.source_id == small.source_id
    # and the store still works afterwards
    assert store.capture(3, [rec(2, "after the failure")]).batch_id == 2
    store.close()


def test_unwritable_directory_is_a_capture_error(tmp_path: Path) -> None:
    blocker = tmp_path / "thread" / "task-history"
    blocker.parent.mkdir()
    blocker.write_text("a file where the directory should be")
    store = ArchiveStore(blocker / "history.sqlite", cfg())
    with pytest.raises(CaptureError):
        store.capture(1, [rec(1, "text")])
    assert store.batches() == []


def test_corrupt_and_foreign_files_are_unavailable(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 200)
    store = ArchiveStore(path, cfg())
    with pytest.raises(ArchiveUnavailableError):
        store.batches()
    with pytest.raises(CaptureError):
        store.capture(1, [rec(1, "text")])
    assert path.read_bytes().startswith(b"this is not a database")  # left as it was
    path.unlink()
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()
    with pytest.raises(ArchiveUnavailableError):
        ArchiveStore(path, cfg()).batches()


def test_schema_is_versioned_and_uses_wal(path: Path) -> None:
    store = ArchiveStore(path, cfg())
    store.capture(1, [rec(1, "text")])
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    store.close()


def test_readonly_store_reads_but_never_writes(path: Path) -> None:
    ArchiveStore(path, cfg()).capture(1, [rec(1, "hello")])
    ro = ArchiveStore(path, cfg(), readonly=True)
    assert [b.id for b in ro.batches()] == [1]
    with pytest.raises(CaptureError):
        ro.capture(2, [rec(2, "x")])
    ro.close()


def test_batches_and_sources_listing(path: Path) -> None:
    store = ArchiveStore(path, cfg())
    store.capture(42, [rec(1, "hello"), rec(2, "world", role="assistant")])
    [info] = store.batches()
    assert info.batch_key == 42 and info.records == 2 and info.created.endswith("Z")
    assert [(s.role, s.chars) for s in store.sources(info.id)] == [("user", 5), ("assistant", 5)]
    store.close()


def test_competing_captures_serialize(path: Path) -> None:
    stores = [ArchiveStore(path, cfg(max_batches=1)) for _ in range(2)]
    barrier = threading.Barrier(2)
    results: dict[int, object] = {}

    def run(n: int, key: int) -> None:
        barrier.wait()
        try:
            results[n] = stores[n].capture(key, [rec(n * 10 + i, f"t{n} {i}") for i in range(50)])
        except Exception as exc:  # pragma: no cover - reported below
            results[n] = exc

    threads = [threading.Thread(target=run, args=(n, n + 1)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(not isinstance(r, Exception) for r in results.values()), results
    [kept] = stores[0].batches()
    assert kept.id == max(r.batch_id for r in results.values())

    # the same compaction from both threads: one batch, the same id for both
    results.clear()

    def same(n: int) -> None:
        barrier.wait()
        results[n] = stores[n].capture(99, [rec(i, f"same {i}") for i in range(50)])

    threads = [threading.Thread(target=same, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[0].batch_id == results[1].batch_id
    assert sorted([results[0].duplicate, results[1].duplicate]) == [False, True]
    for store in stores:
        store.close()


class _GatedStore(ArchiveStore):
    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()

    def capture(self, batch_key, records):
        self.entered.set()
        self.release.wait(10)
        try:
            return super().capture(batch_key, records)
        finally:
            self.finished.set()


async def test_cancelled_capture_drains_before_returning(path: Path) -> None:
    store = _GatedStore(path, cfg())
    task = asyncio.create_task(capture_offloaded(store, 1, [rec(1, "drained")]))
    await asyncio.to_thread(store.entered.wait, 10)
    task.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()  # still waiting for the write to end
    store.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.finished.is_set()
    assert [b.batch_key for b in store.batches()] == [1]
    store.close()


async def test_offloaded_capture_returns_result_and_errors(path: Path) -> None:
    store = ArchiveStore(path, cfg())
    result = await capture_offloaded(store, 5, [rec(1, "x")])
    assert result.batch_id == 1
    with pytest.raises(CaptureError):
        await capture_offloaded(store, "bad", [])  # type: ignore[arg-type]
    store.close()


def test_search_and_read_never_scan_a_table(path: Path) -> None:
    store = ArchiveStore(path, cfg())
    store.capture(1, [rec(1, "alpha beta"), rec(2, "gamma", role="assistant")])
    store.capture(2, [rec(3, "alpha delta")])
    executed: list[str] = []
    store.search("alpha", batch_ids=[1, 2])  # opens the connection
    store._conn.set_trace_callback(executed.append)
    store.search("alpha gamma", role="assistant", batch_ids=[1, 2])
    store.search("alpha", batch_ids=[1, 2])
    store.read(rec(1, "alpha beta").source_id, [1, 2])
    store.available([rec(3, "alpha delta").source_id], [1, 2])
    store._conn.set_trace_callback(None)
    plans = []
    for sql in executed:
        if sql.lstrip().upper().startswith("SELECT"):
            params = sql.count("?")
            explain = store._conn.execute("EXPLAIN QUERY PLAN " + sql.replace("?1", "'x'"), ())
            plans += [row[3] for row in explain] if params == 0 else []
    assert plans, executed
    scans = [p for p in plans if re.match(r"SCAN (sources|batches|s)\b", p)]
    assert not scans, plans
    store.close()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores modes")
def test_read_only_directory_is_a_capture_error(tmp_path: Path) -> None:
    locked = tmp_path / "thread"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(CaptureError):
            ArchiveStore(locked / "task-history" / "history.sqlite", cfg()).capture(
                1, [rec(1, "x")]
            )
    finally:
        locked.chmod(0o700)


def test_an_empty_batch_is_still_a_batch(path: Path) -> None:
    store = ArchiveStore(path, cfg())
    result = store.capture(1, [])
    assert (result.batch_id, result.records, result.omitted_records) == (1, 0, 0)
    assert store.search("anything", batch_ids=[1]) == []
    store.close()


def test_bad_input_to_capture_is_refused(path: Path) -> None:
    store = ArchiveStore(path, cfg())
    with pytest.raises(CaptureError):
        store.capture(True, [])  # type: ignore[arg-type]
    with pytest.raises(CaptureError):
        store.capture(1, [("not", "a", "record")])  # type: ignore[list-item]
    assert not path.exists()


def test_migrations_run_in_order_one_transaction_each(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert [m.version for m in schema.MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))

    def broken(conn: sqlite3.Connection, scope: str | None) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        raise sqlite3.OperationalError("step 2 failed")

    monkeypatch.setattr(schema, "MIGRATIONS", (schema.MIGRATIONS[0], schema.Migration(2, broken)))
    store = ArchiveStore(path, cfg(), scope="a" * 32)
    with pytest.raises(CaptureError, match="step 2 failed"):
        store.capture(1, [rec(1, "text")])
    # a new file is made whole before it takes the archive's name: this one never did
    assert os.listdir(path.parent) == []
    # an existing file is migrated in place: a version 1 file, as an older Trove left it
    conn = sqlite3.connect(path)
    schema.MIGRATIONS[0].apply(conn, None)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with pytest.raises(CaptureError, match="step 2 failed"):
        store.capture(1, [rec(1, "text")])
    store.close()
    conn = sqlite3.connect(path)
    # step 1 stayed done; step 2 rolled back alone
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "batches" in tables and "half_done" not in tables and "meta" not in tables
    conn.close()
    monkeypatch.undo()
    store = ArchiveStore(path, cfg(), scope="a" * 32)
    store.capture(1, [rec(1, "text")])  # the next writer finishes the migration
    assert [b.batch_key for b in store.batches()] == [1]
    store.close()


def test_a_first_capture_committing_mid_check_reads_as_empty_not_foreign(path: Path) -> None:
    """Found as a rare failure of the test above: a store checking a new, empty archive read
    its header (zero) before another store's first capture committed and its tables after,
    and called the file "not a Trove archive". The check now reads in one snapshot."""
    from engine.continuity.archive.file import connect
    from engine.continuity.archive.schema import migrate, schema_state

    path.parent.mkdir(parents=True)
    first = connect(path, "rwc")
    first.execute("PRAGMA journal_mode = WAL")  # the other reader's snapshot stays its own
    checker = connect(path, "rw")

    class CommitAfterTheHeader:
        """The checker's connection; the other store commits right after the first read."""

        def __init__(self) -> None:
            self.reads = 0

        @property
        def in_transaction(self) -> bool:
            return checker.in_transaction

        def execute(self, sql: str) -> sqlite3.Cursor:
            cursor = checker.execute(sql)
            if sql.startswith("PRAGMA"):
                self.reads += 1
                if self.reads == 1:
                    migrate(first, path, None)
            return cursor

    conn = CommitAfterTheHeader()
    assert schema_state(conn, path, None) is None  # type: ignore[arg-type]
    assert conn.reads >= 2 and not checker.in_transaction
    assert schema_state(checker, path, None) == schema_state(first, path, None)
    first.close()
    checker.close()
