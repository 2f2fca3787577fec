"""Term filters: a batch is skipped only when it certainly lacks a term, so hits never change."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from engine.config import TaskContinuityConfig
from engine.continuity import ArchiveStore, Source, source_id
from engine.continuity.archive import fts, term_filter

MIXED = [
    "Deploy DB-4471 to prod; naïve CAFÉ Straße İstanbul ǅemal ﬁle K-9 ①②",
    "我们需要在周五之前完成数据库迁移 and the Blue-Key is in drawer 3",
    "日本語のテキスト 한국어 text_with_underscores x²+y² ＡＢＣ fullwidth",
    "Mixed钥匙run and 钥 alone; tabs\tand\nnewlines; emoji 🙂 ok",
]


def rec(seq: int, text: str) -> Source:
    return Source(source_id("user", seq, text), "user", seq, text)


def test_every_token_fts_indexes_passes_the_filter(tmp_path: Path) -> None:
    """Soundness: each ASCII word and CJK bigram FTS5 holds for a batch reads 'maybe'."""
    path = tmp_path / "history.sqlite"
    store = ArchiveStore(path, TaskContinuityConfig())
    store.capture(1, [rec(i, text) for i, text in enumerate(MIXED)])
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, 'fts_1', 'row')")
    vocab = [r[0] for r in conn.execute("SELECT term FROM temp.v")]
    bits = conn.execute("SELECT bits FROM term_filters WHERE batch_id = 1").fetchone()[0]
    conn.close()
    checked = 0
    for token in vocab:
        # A query term FTS5 looks up as this token has the token as its text.
        hashed = term_filter.term_hash(fts.Term(token))
        if hashed is not None:
            checked += 1
            assert term_filter.may_hold(bits, hashed), token
    assert checked >= 20
    assert term_filter.term_hash(fts.Term("钥", prefix=True)) is None
    assert term_filter.term_hash(fts.Term("café")) is None


def test_filters_change_no_hit_and_leave_with_their_batch(tmp_path: Path) -> None:
    rng = random.Random(11)
    vocabulary = [f"w{n}" for n in range(400)] + ["钥匙", "数据", "Blue", "DB-4471"]
    path = tmp_path / "history.sqlite"
    store = ArchiveStore(path, TaskContinuityConfig(max_batches=6))
    for key in range(1, 9):
        texts = [" ".join(rng.choices(vocabulary, k=12)) for _ in range(20)]
        store.capture(key, [rec(key * 100 + i, t) for i, t in enumerate(texts)])
    ids = [b.id for b in store.batches()]
    assert ids == [3, 4, 5, 6, 7, 8]
    queries = ["w7", "w7 w399", "钥匙", "钥", "blue db 4471", "w1 nowhere", "nowhere", "w3 w5 w8"]
    filtered = {q: store.search(q, batch_ids=ids) for q in queries}
    store.close()

    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT batch_id FROM term_filters")] == ids
    conn.execute("UPDATE term_filters SET bits = x''")  # no filter: every batch is asked
    conn.commit()
    conn.close()
    unfiltered = ArchiveStore(path, TaskContinuityConfig(), readonly=True)
    for q in queries:
        assert unfiltered.search(q, batch_ids=ids) == filtered[q], q
    unfiltered.close()
    assert filtered["nowhere"] == [] and filtered["w7"]


def test_filters_differ_in_size_so_one_collision_does_not_repeat_everywhere() -> None:
    """A term that collides with a common word collides wherever the filters share a size;
    batches (by term count) and archives (by scope) each have their own."""
    from engine.continuity.archive import terms as archive_terms

    sizes = {term_filter.size_for(n) for n in range(2000, 2100)}
    assert len(sizes) > 50
    scopes = {archive_terms.bits_for(f"local/2025-{n}") for n in range(100)}
    assert len(scopes) > 80 and all(s % 8 == 0 and s > archive_terms.BITS * 0.9 for s in scopes)
    terms = [f"t{n}".encode() for n in range(3000)]
    hashed = term_filter.hash_terms(terms)
    assert term_filter.build_hashed(hashed, 24008) == term_filter.build(terms, bits=24008)
