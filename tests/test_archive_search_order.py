"""Search across many batches: newest batches settle a query; older ones still answer it.

The store probes the newest batches first and only goes further when they
do not fill the places; these tests pin what that must never change: which
hits come back, that a rare term in the oldest batch is found, that partial
matches appear only when nothing holds every term, and where excerpts centre.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.config import TaskContinuityConfig
from engine.continuity import ArchiveStore, Source, source_id
from engine.continuity.archive import fts
from engine.continuity.archive.query import RANK_WINDOW


def rec(seq: int, text: str, role: str = "user") -> Source:
    return Source(source_id(role, seq, text), role, seq, text)


@pytest.fixture
def store(tmp_path: Path) -> ArchiveStore:
    made = ArchiveStore(tmp_path / "task-history" / "history.sqlite", TaskContinuityConfig())
    seq = 0
    for key in range(1, 13):  # batch ids 1..12, each with a common word
        records = []
        for n in range(10):
            seq += 1
            extra = f" rare{key}x{n}" if n == 0 else ""
            records.append(rec(seq, f"common filler batch{key} item{n}{extra}"))
        made.capture(key, records)
    made.capture(13, [rec(1000, "a later batch holds zebra quartz")])
    return made


def tables_queried(store: ArchiveStore, call: object) -> set[str]:
    executed: list[str] = []
    assert store._conn is not None
    store._conn.set_trace_callback(executed.append)
    try:
        call()  # type: ignore[operator]
    finally:
        store._conn.set_trace_callback(None)
    return {m for sql in executed for m in re.findall(r"\bfts_\d+\b", sql)}


def test_a_common_word_is_settled_by_the_newest_batches(store: ArchiveStore) -> None:
    ids = list(range(1, 13))
    store.search("common", batch_ids=ids)  # opens the connection
    hits = []
    touched = tables_queried(store, lambda: hits.extend(store.search("common", batch_ids=ids)))
    assert len(hits) == 8
    assert {h.source.batch for h in hits} == {12}
    assert touched <= {"fts_12", "fts_11"}


def test_a_rare_term_in_the_oldest_reachable_batch_is_found(store: ArchiveStore) -> None:
    ids = list(range(1, 13))
    hits = store.search("rare1x0 common", batch_ids=ids)
    assert [h.source.text for h in hits] == ["common filler batch1 item0 rare1x0"]
    assert hits[0].every
    # a term held nowhere: the partial tier returns the sources holding the other one
    hits = store.search("rare3x0 nowhereword", batch_ids=ids)
    assert [(h.source.batch, h.every) for h in hits] == [(3, False)]
    assert store.search("nowhereword otherword", batch_ids=ids) == []


def test_a_batch_beyond_the_position_is_never_seen(store: ArchiveStore) -> None:
    hits = store.search("rare12x0", batch_ids=list(range(1, 12)))
    assert hits == []
    hits = store.search("common", batch_ids=[2, 5])
    assert {h.source.batch for h in hits} == {5}
    hits = store.search("zebra quartz", batch_ids=list(range(1, 13)))
    assert hits == []  # batch 13 holds it, but this position cannot reach it
    assert [h.source.seq for h in store.search("zebra quartz", batch_ids=[13])] == [1000]


def test_multi_term_queries_match_whole_batches_the_same_in_every_order(
    store: ArchiveStore,
) -> None:
    ids = list(range(1, 13))
    forward = store.search("batch4 item3", batch_ids=ids)
    backward = store.search("item3 batch4", batch_ids=ids)
    assert [h.source.source_id for h in forward] == [h.source.source_id for h in backward]
    assert [h.source.text for h in forward] == ["common filler batch4 item3"]


def test_a_batch_with_many_matches_ranks_the_strongest_of_its_newest(tmp_path: Path) -> None:
    made = ArchiveStore(tmp_path / "h.sqlite", TaskContinuityConfig())
    records = [rec(n, f"note {n} word") for n in range(1, RANK_WINDOW)]
    records.insert(RANK_WINDOW // 2, rec(500, "word word word word"))
    made.capture(1, records)
    hits = made.search("word", batch_ids=[1])
    assert len(hits) == 8
    assert hits[0].source.seq == 500


@pytest.mark.parametrize(
    ("text", "query", "expected"),
    [
        ("前文 ÄBC 蓝色钥匙在抽屉里", "钥匙", "钥匙"),
        ("前文 蓝色 the Deploy Script failed", "deploy script", "Deploy Script"),
        ("前文 蓝色 the DEPLOY step", "deploy", "DEPLOY"),
        ("前文 5 \u212aelvin 蓝", "kelvin", "\u212aelvin"),  # the Kelvin sign folds to k
        ("Ünïcödé Wörd 蓝", "wörd", "Wörd"),
        ("plain ascii Text here", "text", "Text"),
        ("what蓝 then What? Then", "what? then", "What? Then"),  # no '?' stands for 蓝
    ],
)
def test_excerpt_positions_in_non_ascii_text(text: str, query: str, expected: str) -> None:
    start, length = fts.match_position(text, query, fts.query_terms(query))
    assert text[start : start + length].casefold()[:4] == expected.casefold()[:4]
    assert text[start:].startswith(expected[:1])


def test_excerpt_position_falls_back_to_a_term_and_then_to_the_start() -> None:
    text = "蓝色 alpha then beta"
    assert fts.match_position(text, "beta alphaz", fts.query_terms("beta alphaz")) == (14, 4)
    assert fts.match_position(text, "gamma", fts.query_terms("gamma")) == (0, 0)
