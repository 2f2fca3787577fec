"""Issue 13 point 4: `history.terms` lets `--all` skip archives that cannot match, soundly.

The file is only an accelerator: every test here holds `--all`'s answer to
what it is with every such file deleted (the archives then all opened), and
checks that a damaged, foreign, stale or unwritable file, an archive made
anew, eviction and the filter's rebuild never hide a hit.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import zlib
from pathlib import Path
from typing import Any

import pytest

from engine import events as ev
from engine.config import TaskContinuityConfig
from engine.continuity.archive import fts
from engine.continuity.archive import terms as archive_terms
from engine.continuity.archive.extract import source_id
from engine.continuity.archive.records import Source
from engine.continuity.archive.status import archive_reference, scope_binding
from engine.continuity.archive.store import ArchiveStore, archive_path
from engine.continuity.search.active_terms import held, term_patterns
from engine.threads.paths import thread_dir
from engine.threads.thread import Thread
from engine.workspace.search_all import search_all
from tests.cli_support import Env, trove


class Compacting:
    """A thread compacted batch by batch, as /compact leaves it (log and archive)."""

    def __init__(self, home: Path, thread_id: str, *, max_batches: int = 32) -> None:
        self.thread = Thread.create(home, "local", thread_id)
        self.scope = scope_binding("local", thread_id)
        self.config = TaskContinuityConfig(max_batches=max_batches)
        self.archive = archive_path(self.thread.dir)
        self.keys: dict[int, int] = {}
        """Batch id -> the start seq of the compaction that made it (its batch key)."""

    def compact(self, *texts: str) -> int:
        """The texts as prompts, then compacted into one batch; returns its id."""
        log = self.thread.log
        sources = []
        for text in texts:
            seq = log.append(ev.UserMessage(text=text)).seq
            sources.append(Source(source_id("user", seq, text), "user", seq, text))
        seqs = [s.seq for s in sources]
        start = log.append(ev.CompactStart(turn=None, seqs=seqs)).seq
        summary = log.append(
            ev.CompactSummary(
                start=start,
                summary="Earlier work.",
                span=ev.SeqSpan(seqs[0], seqs[-1]),
                replaced=seqs,
            )
        ).seq
        log.append(
            ev.UserMessage(
                text="Checkpoint: earlier work.",
                checkpoint=ev.Checkpoint(summary=summary, start=start),
            )
        )
        with ArchiveStore(self.archive, self.config, scope=self.scope) as store:
            result = store.capture(start, sources)
        log.append(ev.CompactEnd(start=start, archive=archive_reference(result, self.scope)))
        log.flush()
        self.keys[result.batch_id] = start
        return result.batch_id

    def say(self, text: str) -> None:
        self.thread.log.append(ev.UserMessage(text=text))
        self.thread.log.flush()

    def terms(self) -> archive_terms.ArchiveTerms | None:
        return archive_terms.load(self.archive, self.scope)


def without_terms_files(home: Path, query: str, **kw: Any) -> dict[str, Any]:
    """`--all` with every `history.terms` moved away (each archive is opened), then put back."""
    moved = []
    for path in home.glob(f"users/*/threads/*/task-history/{archive_terms.FILE_NAME}"):
        aside = path.with_name("aside")
        path.rename(aside)
        moved.append((aside, path))
    try:
        return search_all(home, "local", query, **kw)
    finally:
        for aside, path in moved:
            aside.rename(path)


def answer(result: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(g["thread"], [r["id"] for r in g["results"]]) for g in result["threads"]]


def test_a_capture_writes_a_private_file_whose_claims_cover_the_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    t = Compacting(home, "t")
    t.compact("alpha KITE-1111 words", "more alpha")
    t.compact("beta LAMP-2222 words")
    terms = t.terms()
    assert terms is not None
    assert terms.present == t.keys and len(t.keys) == 2  # batch id -> its key
    path = archive_terms.terms_path(t.archive)
    assert path.stat().st_mode & 0o777 == 0o600
    hashes = [archive_terms.term_filter.term_hash(term) for term in fts.query_terms("kite 1111")]
    assert terms.may_hold(hashes) == (True, True)
    nothing = [archive_terms.term_filter.term_hash(fts.Term("qqzxnothing"))]
    assert terms.may_hold(nothing) == (False, False)
    t.thread.close()


def test_an_archive_the_filter_rules_out_is_never_opened(tmp_path: Path) -> None:
    """The archive's bytes are destroyed in place (same inode): a query the filter rules
    out is answered without a problem, one it cannot rule out opens it and says so."""
    home = tmp_path / "home"
    t = Compacting(home, "t")
    t.compact("the vault code is KITE-4242")
    t.say("an active message")
    assert answer(search_all(home, "local", "KITE-4242"))[0][0] == "t"
    with open(t.archive, "r+b") as fh:
        fh.write(b"\0" * 4096)
    quiet = search_all(home, "local", "qqzxnothing")
    assert quiet["threads"] == [] and quiet["problems"] == []
    loud = search_all(home, "local", "KITE-4242")
    assert [p["thread"] for p in loud["problems"]] == ["t"]
    assert "unavailable" in loud["problems"][0]["problem"]
    t.thread.close()


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncated", "flipped bit", "other scope", "other archive file", "directory"],
)
def test_a_damaged_or_foreign_terms_file_is_not_trusted(tmp_path: Path, damage: str) -> None:
    home = tmp_path / "home"
    t = Compacting(home, "t")
    t.compact("first batch with KITE-5151")
    path = archive_terms.terms_path(t.archive)
    if damage == "garbage":
        path.write_bytes(b"not a terms file")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[: archive_terms.BITS // 16])
    elif damage == "flipped bit":
        data = bytearray(path.read_bytes())
        data[100] ^= 0x01
        path.write_bytes(bytes(data))
    elif damage == "other scope":  # a file copied here from another thread
        other = Compacting(home, "u")
        other.compact("unrelated words only")
        shutil.copy2(archive_terms.terms_path(other.archive), path)
        other.thread.close()
    elif damage == "other archive file":  # the archive replaced by a copy (a new inode)
        shutil.copy2(t.archive, t.archive.with_name("copy"))
        t.archive.with_name("copy").replace(t.archive)
    else:
        path.unlink()
        path.mkdir()
    assert t.terms() is None
    assert answer(search_all(home, "local", "KITE-5151"))[0][0] == "t"
    t.thread.close()


def test_a_batch_the_file_does_not_cover_opens_the_archive(tmp_path: Path) -> None:
    """An older file (a capture whose write of it failed, or an older Trove) is true but
    incomplete: the line references a batch it does not name, so the archive is asked."""
    home = tmp_path / "home"
    t = Compacting(home, "t")
    t.compact("first batch")
    path = archive_terms.terms_path(t.archive)
    old = path.read_bytes()
    t.compact("second batch with LAMP-6161")
    path.write_bytes(old)  # as if the second capture could not replace it
    terms = t.terms()
    assert terms is not None and len(terms.present) == 1
    assert answer(search_all(home, "local", "LAMP-6161"))[0][0] == "t"
    t.compact("third batch")  # the next capture rebuilds it from every batch
    terms = t.terms()
    assert terms is not None and len(terms.present) == 3
    assert answer(search_all(home, "local", "LAMP-6161"))[0][0] == "t"
    t.thread.close()


def test_a_terms_file_that_cannot_be_written_never_fails_a_capture(tmp_path: Path) -> None:
    home = tmp_path / "home"
    t = Compacting(home, "t")
    t.compact("first batch")
    path = archive_terms.terms_path(t.archive)
    path.unlink()
    path.mkdir()  # neither readable as the file nor replaceable by it
    t.compact("second batch with MOTH-7171")  # the capture still commits
    assert path.is_dir()
    assert not [p for p in path.parent.iterdir() if p.name.startswith(f".{path.name}")]
    assert answer(search_all(home, "local", "MOTH-7171"))[0][0] == "t"
    t.thread.close()


def test_an_archive_made_anew_never_inherits_the_old_files_claims(tmp_path: Path) -> None:
    """Ids start again in a new archive file; the old file's floor and bits speak of the
    old one, so Trove removes it before it creates the new archive."""
    home = tmp_path / "home"
    t = Compacting(home, "t", max_batches=2)
    for n in range(4):
        t.compact(f"batch {n} words")
    for suffix in ("", "-wal", "-shm"):
        t.archive.with_name(t.archive.name + suffix).unlink(missing_ok=True)
    t.compact("a new archive holds NEWT-8181")
    terms = t.terms()
    assert terms is not None and terms.floor == 1 and list(terms.present) == [1]
    assert answer(search_all(home, "local", "NEWT-8181"))[0][0] == "t"
    t.thread.close()


def test_eviction_and_a_rebuild_drop_what_is_gone_and_keep_what_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    t = Compacting(home, "t", max_batches=2)
    t.compact("oldest holds GONE-9191")
    t.compact("middle holds KEPT-9292")
    t.compact("newest holds LAST-9393")  # evicts the oldest
    terms = t.terms()
    assert terms is not None and terms.floor == 2 and sorted(terms.present) == [2, 3]
    gone = [archive_terms.term_filter.term_hash(fts.Term("gone"))]
    assert terms.may_hold(gone)[1]  # a plain extension keeps the evicted batch's bits
    monkeypatch.setattr(archive_terms, "_FULL", 0.0)  # every filter is "full" ...
    base = terms.base
    t.compact("another holds NEXT-9494")  # ... but too little grew since: extended
    terms = t.terms()
    assert terms is not None and terms.base == base and terms.may_hold(gone)[1]
    monkeypatch.setattr(archive_terms, "_GROWN", 0.0)  # now every capture rebuilds
    t.compact("yet another holds MORE-9595")  # evicts batch 3
    terms = t.terms()
    assert terms is not None and terms.floor == 4 and sorted(terms.present) == [4, 5]
    assert not terms.may_hold(gone)[1]
    assert terms.base == int.from_bytes(terms.bits, "little").bit_count() > 0
    for query in ("GONE-9191", "KEPT-9292", "LAST-9393", "NEXT-9494", "MORE-9595"):
        assert answer(search_all(home, "local", query)) == answer(
            without_terms_files(home, query)
        ), query
    assert answer(search_all(home, "local", "NEXT-9494"))[0][0] == "t"
    t.thread.close()


WORDS = [f"w{n}" for n in range(60)] + ["数据库", "迁移", "部署", "Straße", "naïve", "id_7"]


def test_all_answers_the_same_with_or_without_the_files(tmp_path: Path) -> None:
    """A soak of random threads, captures and evictions: for every query, `--all` with
    the files equals `--all` with every archive opened, limited or not."""
    rng = random.Random(1313)
    home = tmp_path / "home"
    threads = []
    for n in range(6):
        t = Compacting(home, f"t{n}", max_batches=3)
        for _ in range(rng.randint(1, 6)):
            t.compact(*(" ".join(rng.choices(WORDS, k=8)) for _ in range(rng.randint(1, 4))))
        t.say(" ".join(rng.choices(WORDS, k=6)))
        threads.append(t)
    queries = ["qqzx"] + [" ".join(rng.sample(WORDS, k=rng.randint(1, 3))) for _ in range(40)]
    for query in queries:
        for limit in (0, 2):
            fast = search_all(home, "local", query, max_threads=limit)
            slow = without_terms_files(home, query, max_threads=limit)
            assert answer(fast) == answer(slow), query
            assert fast["problems"] == slow["problems"] == []
    for t in threads:
        t.thread.close()


def test_the_pattern_match_equals_the_token_match() -> None:
    """`--all` decides whether active text holds a term without tokenizing it."""
    rng = random.Random(77)
    pieces = ["ab", "abc", "_", "-", " ", "1", "x1", "é", "ß", "数据", "据库", "\n", "Ab", "ǅ"]
    for _ in range(3000):
        text = "".join(rng.choices(pieces, k=rng.randint(1, 12)))
        query = "".join(rng.choices(pieces, k=rng.randint(1, 4)))
        terms = fts.query_terms(query)
        if not terms:
            continue
        folded = text.casefold()
        expected = fts.matched_terms(terms, set(fts.tokens(text)))
        assert held(folded, term_patterns(terms)) == expected, (text, query)


def test_a_limit_keeps_the_newest_threads_and_counts_the_rest(env: Env) -> None:
    for n in range(4):
        t = Compacting(env.home, f"2025010{n}-t")
        t.compact(f"thread {n} speaks of ORCA-3030")
        t.thread.close()
    found = search_all(env.home, "local", "ORCA-3030", max_threads=2)
    assert [g["thread"] for g in found["threads"]] == ["20250103-t", "20250102-t"]
    assert found["threads_searched"] == 2 and found["threads_not_searched"] == 2
    every = search_all(env.home, "local", "ORCA-3030", max_threads=0)
    assert len(every["threads"]) == 4 and every["threads_not_searched"] == 0
    cli = trove(*env.common, "history", "search", "ORCA-3030", "--all", "--max-threads", "2")
    assert cli.returncode == 0, cli.stderr
    assert "stopped at 2 threads with matches; 2 older threads not searched" in cli.stdout
    whole = trove(*env.common, "history", "search", "ORCA-3030", "--all", "--max-threads", "0")
    assert whole.stdout.count("thread 2025010") == 4
    bad = trove(*env.common, "history", "search", "ORCA-3030", "--all", "--max-threads", "-1")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--max-threads" in bad.stderr
    alone = trove(*env.common, "history", "search", "ORCA-3030", "--max-threads", "2")
    assert alone.returncode == 2 and "--all" in alone.stderr
    data = json.loads(
        trove(*env.common, "history", "search", "ORCA-3030", "--all", "--json").stdout
    )
    assert data["threads_not_searched"] == 0 and len(data["threads"]) == 4


def test_threads_holding_every_word_apart_are_left_out_when_one_holds_them_together(
    tmp_path: Path,
) -> None:
    """The tool's tiers across threads: words spread over sources are not a match for
    every word. A hit FTS5 found lacking a word never reads `matched: all`, even when
    its text holds that word inside a longer one ("pr" in "sprint")."""
    home = tmp_path / "home"
    together = Compacting(home, "20250101-together")
    together.compact("code PR-5679-CM here")
    apart = Compacting(home, "20250102-apart")
    apart.compact("sprint cm notes", "ticket 5679 closed", "pr review done")
    found = search_all(home, "local", "PR-5679-CM")
    assert [g["thread"] for g in found["threads"]] == ["20250101-together"]
    alone = search_all(home, "local", "PR-5679-CM-ZZ")  # nobody holds all four words
    groups = {g["thread"]: g for g in alone["threads"]}
    assert set(groups) == {"20250101-together", "20250102-apart"}
    assert {r["matched"] for g in groups.values() for r in g["results"]} == {"some"}
    together.thread.close()
    apart.thread.close()
    inside = Compacting(tmp_path / "other", "inside")
    inside.compact("sprint 5679 cmd")  # every word, but "pr" and "cm" only inside others
    hits = search_all(tmp_path / "other", "local", "PR-5679-CM")["threads"][0]["results"]
    assert [r["matched"] for r in hits] == ["some"]
    inside.thread.close()


def test_the_summary_format_holds_the_batch_keys(tmp_path: Path) -> None:
    home = tmp_path / "home"
    t = Compacting(home, "t")
    batch = t.compact("words")
    from engine.workspace.summary import summarize

    refs = summarize(home, "local", "t").scan.refs
    assert [(r.batch, r.start) for r in refs] == [(batch, t.keys[batch])]
    assert thread_dir(home, "local", "t") == t.thread.dir
    t.thread.close()


def test_words_only_ever_apart_in_batches_rule_the_archive_out_unopened(tmp_path: Path) -> None:
    """A source holding every word sits in one batch: each batch's own filter is in the
    file too, so while another thread holds the words together, an archive holding them
    only in different batches is not opened (its bytes are destroyed in place: opening
    it would be a problem reported)."""
    home = tmp_path / "home"
    other = Compacting(home, "u")
    other.compact("here WREN 4711 together")
    other.thread.close()
    t = Compacting(home, "t")
    t.compact("the first half WREN here")
    t.compact("the second half 4711 there")
    t.compact("both together WREN 4712 at once")
    terms = t.terms()
    assert terms is not None
    with open(t.archive, "r+b") as fh:
        fh.write(b"\0" * 4096)
    apart = search_all(home, "local", "WREN-4711")
    assert answer(apart) == [("u", [apart["threads"][0]["results"][0]["id"]])]
    assert apart["problems"] == []
    together = search_all(home, "local", "WREN-4712")
    assert [p["thread"] for p in together["problems"]] == ["t"]
    t.thread.close()


@pytest.mark.parametrize("damage", ["cut", "flipped bit"])
def test_damaged_batch_filters_only_cost_an_opening(tmp_path: Path, damage: str) -> None:
    home = tmp_path / "home"
    t = Compacting(home, "t")
    t.compact("the first half WREN here")
    t.compact("the second half 4711 there and WREN 4711 together")
    path = archive_terms.terms_path(t.archive)
    data = bytearray(path.read_bytes())
    if damage == "cut":
        del data[-100:]
    else:
        data[-100] ^= 0x10
    path.write_bytes(bytes(data))
    whole = archive_terms.load(t.archive, t.scope)
    assert whole is not None and whole.filters is None  # the words' filter still serves
    assert archive_terms.load(t.archive, t.scope, filters=True) is None
    assert answer(search_all(home, "local", "WREN-4711"))[0][0] == "t"
    assert search_all(home, "local", "qqzx")["threads"] == []
    t.thread.close()


def _damaged(path: Path, scope: str, damage: str) -> None:
    """Put a terms file with this damage in place of the good one at `path`."""
    data = bytearray(path.read_bytes())
    head = archive_terms._HEAD
    if damage in ("huge pair count", "huge filters length"):
        fields = list(head.unpack_from(data))
        first = head.size + fields[7] + fields[6] * 16 + archive_terms.bits_for(scope) // 8
        fields[6 if damage == "huge pair count" else 8] = 0xFFFFFFFF
        head.pack_into(data, 0, *fields)
        # The first part's CRC made right again, as a tool that fixes CRCs would: the file
        # reads as whole until its lengths are held against its size.
        data[first : first + 4] = zlib.crc32(data[:first]).to_bytes(4, "little")
    path.unlink()
    if damage == "garbled":
        path.write_bytes(bytes(b ^ 0x5A for b in data))
    elif damage == "zero-filled":
        path.write_bytes(bytes(len(data)))
    elif damage == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif damage == "fifo":
        os.mkfifo(path)
    elif damage == "huge file":
        path.write_bytes(data)
        os.truncate(path, 2 << 30)
    else:
        path.write_bytes(data)


@pytest.mark.parametrize(
    "damage",
    [
        "huge pair count",
        "huge filters length",
        "garbled",
        "zero-filled",
        "link to /dev/zero",
        "fifo",
        "huge file",
    ],
)
def test_a_terms_file_that_is_huge_garbled_or_not_a_file_only_costs_an_opening(
    env: Env, damage: str
) -> None:
    """Issue 30 point 3: `--all` answers (the archive searched directly), with no
    traceback, without waiting on a FIFO or reading a length the file does not hold, in
    bounded memory (the child's address space is capped: an allocation the damage asks
    for is a MemoryError there); the next capture writes a true file in its place."""
    t = Compacting(env.home, "t")
    t.compact("first batch with KITE-5151")
    t.say("an active message")
    path = archive_terms.terms_path(t.archive)
    _damaged(path, t.scope, damage)
    found = trove(
        *env.common, "history", "search", "KITE-5151", "--all", "--json", timeout=20, memory=1 << 30
    )
    assert found.returncode == 0 and "Traceback" not in found.stderr, found.stderr
    result = json.loads(found.stdout)
    assert answer(result)[0][0] == "t" and result["problems"] == []
    assert archive_terms.load(t.archive, t.scope) is None or damage == "huge filters length"
    assert archive_terms.load(t.archive, t.scope, filters=True) is None
    t.compact("second batch with MOTH-7171")  # the next capture
    assert path.is_file() and not path.is_symlink() and path.stat().st_size < 1 << 20
    terms = t.terms()
    assert terms is not None and terms.present == t.keys and len(t.keys) == 2
    assert answer(search_all(env.home, "local", "MOTH-7171"))[0][0] == "t"
    t.thread.close()
