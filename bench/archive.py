"""Benchmark: the task-history archive filled to its page ceiling.

Fills a fresh archive with 256-record batches of synthetic prose (Zipf-like
English vocabulary, a unique code per record, some Chinese) until retention
is running at the 32,768-page ceiling, then prints, each figure beside its
target (DESIGN.md) with pass/miss:

- capture of a 256-record batch on the full archive, through the app's own
  off-loop path (`capture_offloaded`, a worker thread drained on cancel),
  and the event loop's longest stall while the capture ran (a probe task
  that asks to wake every millisecond; its worst lateness is the stall a
  keystroke would feel);
- history_search (`HistoryView.search`: the whole tool minus JSON, excerpts
  included) p50/p95 per query kind: a single word drawn from the prose's
  own distribution, several words (a record's code: three terms), a CJK
  bigram, a query that matches nothing, and an exact source-id read
  (`history_read`), plus the store's search alone, and the CPU p95 (the
  calling thread's CPU time: on a shared, loaded machine the wall p95 is
  mostly time spent waiting for a core, which this figure leaves out);
- the search figures are on the full archive: every batch is reachable.

Run from the repository root:  python bench/archive.py [--batches N] [--chars N]
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._loop_stall import LoopStall  # noqa: E402
from engine.config import TaskContinuityConfig  # noqa: E402
from engine.continuity.archive.extract import source_id  # noqa: E402
from engine.continuity.archive.records import Source  # noqa: E402
from engine.continuity.archive.status import (
    Resolution,  # noqa: E402
    scope_binding,  # noqa: E402
)
from engine.continuity.archive.store import MAX_PAGE_COUNT, ArchiveStore, capture_offloaded  # noqa: E402
from engine.continuity.search.view import HistoryView  # noqa: E402

LETTERS = "abcdefghijklmnopqrstuvwxyz"
CJK_SENTENCES = [
    "我们需要在周五之前完成数据库迁移",
    "蓝色钥匙在第三个抽屉里",
    "部署脚本在测试环境中失败了",
    "请把配置文件的路径改成新的目录",
]
SEARCH_P95_MS = 1.0  # history_search on a full archive (FTS5 floor 0.4 ms)
CAPTURE_MS = 300.0  # a 256-record capture at the ceiling, off the loop
STALL_MS = 16.0  # the UI loop never stalls longer during a capture (DESIGN.md)


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


def verdict(seconds: float, target_ms: float) -> str:
    return f"(target <= {target_ms:g} ms: {'pass' if seconds * 1000 <= target_ms else 'MISS'})"


async def offloaded(store: ArchiveStore, key: int, records: list[Source]) -> tuple[float, float]:
    """(capture seconds, longest loop stall seconds) for one capture through the app's path."""
    async with LoopStall() as stall:
        started = time.perf_counter()
        await capture_offloaded(store, key, records)
        took = time.perf_counter() - started
    return took, stall.worst


def pages(store: ArchiveStore) -> tuple[int, int]:
    """(pages in the file, pages in use) through the store's own connection."""
    conn = store._conn
    if conn is None:
        return 0, 0
    total = conn.execute("PRAGMA page_count").fetchone()[0]
    return int(total), int(total - conn.execute("PRAGMA freelist_count").fetchone()[0])


CPU_TIMES: dict[str, list[float]] = {}
"""Query kind -> the calling thread's CPU seconds per history_search (no waiting for a core)."""


def timed(samples: dict[str, list[float]], kind: str, call: Callable[[], object]) -> object:
    started = time.perf_counter()
    cpu = time.thread_time()
    out = call()
    samples.setdefault(kind, []).append(time.perf_counter() - started)
    CPU_TIMES.setdefault(kind, []).append(time.thread_time() - cpu)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=40, help="batches to capture")
    parser.add_argument("--chars", type=int, default=10000, help="characters per record")
    parser.add_argument("--queries", type=int, default=200, help="queries per kind")
    args = parser.parse_args(argv)

    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rng = random.Random(2026)
    words, cum = vocabulary(rng, 60000)
    config = TaskContinuityConfig()
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "task-history" / "history.sqlite"
        # Bound to a thread as the app's store is, so each capture also writes the
        # archive's history.terms (archive_terms.py), as it does in the app.
        store = ArchiveStore(path, config, scope=scope_binding("local", "bench"))
        codes: dict[int, list[tuple[str, str]]] = {}
        captures: list[tuple[float, float, bool]] = []
        seq = 0
        generating = 0.0
        for key in range(1, args.batches + 1):
            started = time.perf_counter()
            records = []
            planted = []
            for _ in range(config.max_records_per_batch):
                seq += 1
                marker = code(rng)
                role = "user" if seq % 2 else "assistant"
                text = f"Record {seq}: the code is {marker}. " + record_text(
                    rng, words, cum, args.chars
                )
                sid = source_id(role, seq, text)
                records.append(Source(sid, role, seq, text))
                planted.append((marker, sid))
            generating += time.perf_counter() - started
            full = pages(store)[1] > 0.85 * MAX_PAGE_COUNT
            took, stall = loop.run_until_complete(offloaded(store, key, records))
            captures.append((took, stall, full))
            batch_id = store.batches()[-1].id
            codes[batch_id] = planted

        total, used = pages(store)
        batches = store.batches()
        print(
            f"archive: {len(batches)} batches x {config.max_records_per_batch} records kept "
            f"of {args.batches} captured, {args.chars} chars/record"
        )
        print(
            f"pages: {used} used + {total - used} free of {MAX_PAGE_COUNT} "
            f"({(total * 4096) / 2**20:.1f} MiB file); text generation {generating:.1f} s"
        )
        if store._conn is not None:
            size = store._conn.execute("SELECT sum(length(bits)) FROM term_filters").fetchone()[0]
            print(f"term filters: {(size or 0) / 1024:.0f} KiB (the batches' search filters)")
        at_ceiling = [(t, s) for t, s, full in captures if full]
        if at_ceiling:
            took = statistics.median(t for t, _ in at_ceiling)
            stall = max(s for _, s in at_ceiling)
            print(
                f"capture 256 x {args.chars:,} chars at the ceiling, off-loop "
                f"(n={len(at_ceiling)}): p50 {ms(took)}, max {ms(max(t for t, _ in at_ceiling))} "
                f"{verdict(took, CAPTURE_MS)}"
            )
            print(f"  longest loop stall during them: {ms(stall)} {verdict(stall, STALL_MS)}")
        else:
            print("capture: the ceiling was never reached (raise --batches or --chars)")
        below = [t for t, _, full in captures if not full]
        if below:
            print(f"capture below the ceiling: p50 {ms(statistics.median(below))}")

        typical: list[tuple[float, float]] = []
        for key in range(args.batches + 1, args.batches + 6):
            records = []
            for _ in range(config.max_records_per_batch):
                seq += 1
                text = record_text(rng, words, cum, 2000)
                records.append(Source(source_id("user", seq, text), "user", seq, text))
            typical.append(loop.run_until_complete(offloaded(store, key, records)))
        took = statistics.median(t for t, _ in typical)
        stall = max(s for _, s in typical)
        print(
            f"capture 256 x 2,000 chars at the ceiling, off-loop: p50 {ms(took)}, "
            f"max {ms(max(t for t, _ in typical))} {verdict(took, CAPTURE_MS)}; "
            f"longest loop stall {ms(stall)} {verdict(stall, STALL_MS)}"
        )
        loop.close()

        ids = [b.id for b in store.batches()]
        live = [pair for b in ids if b in codes for pair in codes[b]]
        kinds: dict[str, Callable[[], str]] = {
            "single word": lambda: rng.choices(words, cum_weights=cum)[0],
            "several words": lambda: rng.choice(live)[0],
            "CJK bigram": lambda: (lambda s, i: s[i : i + 2])(
                (s := rng.choice(CJK_SENTENCES)), rng.randrange(len(s) - 1)
            ),
            "no match": lambda: f"qqzx{rng.randrange(10**6)} vvkq{rng.randrange(10**6)}",
        }
        queries = [(kind, make()) for _ in range(args.queries) for kind, make in kinds.items()]
        rng.shuffle(queries)
        view = HistoryView(Resolution("available", tuple(reversed(ids))), [], store)
        for _kind, q in queries[:40]:  # warm the statement cache and the page cache
            view.search(q)
        view_times: dict[str, list[float]] = {}
        store_times: dict[str, list[float]] = {}
        misses = 0
        for kind, q in queries:
            hits = timed(store_times, kind, partial(store.search, q, batch_ids=ids))
            if kind == "several words" and not hits:
                misses += 1
            timed(view_times, kind, partial(view.search, q))
        for _ in range(args.queries):
            sid = rng.choice(live)[1]
            found = timed(store_times, "source-id read", partial(store.read, sid, ids))
            assert found is not None
            timed(view_times, "source-id read", partial(view.read, sid))
        every = [t for kind, ts in view_times.items() for t in ts if kind != "source-id read"]
        print(
            f"history_search, all kinds (n={len(every)}): p50 {ms(percentile(every, 50))}, "
            f"p95 {ms(percentile(every, 95))} {verdict(percentile(every, 95), SEARCH_P95_MS)}"
        )
        print(
            "  per kind: history tool p50 / p95 (store alone p50 / p95) "
            "[CPU p95 of both: a shared machine's waits for a core left out]"
        )
        for kind, samples in view_times.items():
            p95 = percentile(samples, 95)
            alone = store_times[kind]
            print(
                f"    {kind:15} n={len(samples):3}  {ms(percentile(samples, 50))} / {ms(p95)} "
                f"({ms(percentile(alone, 50))} / {ms(percentile(alone, 95))}) "
                f"[{ms(percentile(CPU_TIMES[kind], 95))}] {verdict(p95, SEARCH_P95_MS)}"
            )
        print(f"  codes searched but not found: {misses}")
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
