"""Benchmark: the task-history archive filled to its page ceiling.

Fills a fresh archive with 256-record batches of synthetic prose (Zipf-like
English vocabulary, a unique code per record, some Chinese) until retention
is running at the 32,768-page ceiling, then prints:

- capture time of a 256-record batch on the full archive (target <= 300 ms),
- search p50/p95 through the store and through `HistoryView.search` (the
  whole history_search tool minus JSON: excerpts included; target p95 <= 2 ms),
- read latency of an exact source id.

Run from the repository root:  python bench/archive.py [--batches N] [--chars N]
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.config import TaskContinuityConfig  # noqa: E402
from engine.continuity.extract import source_id  # noqa: E402
from engine.continuity.records import Source  # noqa: E402
from engine.continuity.search import HistoryView  # noqa: E402
from engine.continuity.status import Resolution  # noqa: E402
from engine.continuity.store import MAX_PAGE_COUNT, ArchiveStore  # noqa: E402

LETTERS = "abcdefghijklmnopqrstuvwxyz"
CJK_SENTENCES = [
    "我们需要在周五之前完成数据库迁移",
    "蓝色钥匙在第三个抽屉里",
    "部署脚本在测试环境中失败了",
    "请把配置文件的路径改成新的目录",
]


def vocabulary(rng: random.Random, size: int) -> tuple[list[str], list[float]]:
    words = ["".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 11))) for _ in range(size)]
    cumulative: list[float] = []
    total = 0.0
    for rank in range(1, size + 1):
        total += 1.0 / rank
        cumulative.append(total)
    return words, cumulative


def code(rng: random.Random) -> str:
    return (
        "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(2))
        + f"-{rng.randint(1000, 9999)}-"
        + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(2))
    )


def record_text(rng: random.Random, words: list[str], cum: list[float], chars: int) -> str:
    picked = rng.choices(words, cum_weights=cum, k=chars // 6)
    text = " ".join(picked)[:chars]
    if rng.random() < 0.1:
        cut = rng.randrange(len(text))
        text = text[:cut] + " " + rng.choice(CJK_SENTENCES) + " " + text[cut:]
    return text


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=40, help="batches to capture")
    parser.add_argument("--chars", type=int, default=10000, help="characters per record")
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args(argv)

    rng = random.Random(2026)
    words, cum = vocabulary(rng, 60000)
    config = TaskContinuityConfig()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "task-history" / "history.sqlite"
        store = ArchiveStore(path, config)
        codes: dict[int, list[tuple[str, str]]] = {}
        capture_times: list[tuple[float, bool]] = []
        seq = 0
        generating = 0.0
        for key in range(1, args.batches + 1):
            started = time.perf_counter()
            records = []
            planted = []
            for _ in range(config.max_records_per_batch):
                seq += 1
                marker = code(rng)
                text = f"Record {seq}: the code is {marker}. " + record_text(
                    rng, words, cum, args.chars
                )
                sid = source_id("user" if seq % 2 else "assistant", seq, text)
                records.append(Source(sid, "user" if seq % 2 else "assistant", seq, text))
                planted.append((marker, sid))
            generating += time.perf_counter() - started
            conn = store._conn
            full = (
                bool(conn)
                and (
                    conn.execute("PRAGMA page_count").fetchone()[0]
                    - conn.execute("PRAGMA freelist_count").fetchone()[0]
                )
                > 0.85 * MAX_PAGE_COUNT
            )
            started = time.perf_counter()
            result = store.capture(key, records)
            capture_times.append((time.perf_counter() - started, full))
            codes[result.batch_id] = planted

        conn = store._conn
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        batches = store.batches()
        ids = [b.id for b in batches]
        print(
            f"archive: {len(batches)} batches x {config.max_records_per_batch} records kept "
            f"of {args.batches} captured, {args.chars} chars/record"
        )
        print(
            f"pages: {pages - free} used + {free} free of {MAX_PAGE_COUNT} "
            f"({(pages * 4096) / 2**20:.1f} MiB file); text generation {generating:.1f} s"
        )

        at_ceiling = [t for t, full in capture_times if full]
        print(
            f"capture 256 records at the ceiling (n={len(at_ceiling)}): "
            f"p50 {ms(statistics.median(at_ceiling))}, max {ms(max(at_ceiling))}"
            if at_ceiling
            else "capture: the ceiling was never reached (raise --batches or --chars)"
        )
        first = [t for t, full in capture_times if not full]
        if first:
            print(f"capture 256 records below the ceiling: p50 {ms(statistics.median(first))}")

        typical: list[float] = []
        for key in range(args.batches + 1, args.batches + 6):
            records = []
            for _ in range(config.max_records_per_batch):
                seq += 1
                text = record_text(rng, words, cum, 2000)
                records.append(Source(source_id("user", seq, text), "user", seq, text))
            started = time.perf_counter()
            store.capture(key, records)
            typical.append(time.perf_counter() - started)
        print(
            f"capture 256 records x 2,000 chars at the ceiling: p50 "
            f"{ms(statistics.median(typical))}, max {ms(max(typical))}"
        )
        batches = store.batches()
        ids = [b.id for b in batches]
        live = [pair for b in ids if b in codes for pair in codes[b]]
        queries: list[tuple[str, str]] = []
        for _ in range(args.queries):
            kind = rng.random()
            if kind < 0.5:
                queries.append(("exact code", rng.choice(live)[0]))
            elif kind < 0.65:
                queries.append(("CJK phrase", rng.choice(CJK_SENTENCES)[:6]))
            elif kind < 0.8:
                queries.append(
                    ("two rare words", f"{rng.choice(words[20000:])} {rng.choice(words[20000:])}")
                )
            elif kind < 0.95:
                queries.append(("common word", rng.choice(words[:50])))
            else:
                queries.append(("FTS syntax", '" OR * NOT NEAR( x )'))

        view = HistoryView(Resolution("available", tuple(reversed(ids))), [], store)
        for _label, q in queries[:20]:  # warm the statement cache and page cache
            store.search(q, batch_ids=ids)
        by_kind: dict[str, list[float]] = {}
        store_times: list[float] = []
        view_times: list[float] = []
        misses = 0
        for label, q in queries:
            started = time.perf_counter()
            hits = store.search(q, batch_ids=ids)
            elapsed = time.perf_counter() - started
            store_times.append(elapsed)
            by_kind.setdefault(label, []).append(elapsed)
            if label == "exact code" and not hits:
                misses += 1
            started = time.perf_counter()
            view.search(q)
            view_times.append(time.perf_counter() - started)
        print(
            f"search via store ({len(queries)} queries): p50 {ms(percentile(store_times, 50))}, "
            f"p95 {ms(percentile(store_times, 95))}  (target p95 <= 2 ms)"
        )
        for label, samples in sorted(by_kind.items()):
            print(
                f"    {label:15} n={len(samples):3}  p50 {ms(percentile(samples, 50))}  "
                f"p95 {ms(percentile(samples, 95))}"
            )
        print(
            f"history_search (view, excerpts): p50 {ms(percentile(view_times, 50))}, "
            f"p95 {ms(percentile(view_times, 95))}; exact codes missed: {misses}"
        )

        read_times: list[float] = []
        page_times: list[float] = []
        for _ in range(args.queries):
            sid = rng.choice(live)[1]
            started = time.perf_counter()
            found = store.read(sid, ids)
            read_times.append(time.perf_counter() - started)
            assert found is not None
            started = time.perf_counter()
            view.read(sid, 4000)
            page_times.append(time.perf_counter() - started)
        print(
            f"read exact source: p50 {ms(percentile(read_times, 50))}, "
            f"p95 {ms(percentile(read_times, 95))}; history_read page p95 "
            f"{ms(percentile(page_times, 95))}"
        )
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
