"""Benchmark: replaying session logs and resuming a thread (no model server needed).

    python bench/log_replay.py [--runs 9] [--sizes 10000 100000]
                               [--resume-sizes 10000 100000 1000000]

Generates realistic logs (queued prompts, turns, tool round trips with results,
assistant replies carrying usage, the odd injection) in a temporary directory,
then prints:

* replay throughput: `SessionLog.open` of a log with no resume index (the one pass of
  engine/log/cold.py, the surface folded, the index written) and `for_log`, median of
  N runs per size, against the DESIGN.md target of >= 200,000 events/s, beside two
  floors: reading the file and parsing every line with orjson (plain dicts:
  the fastest JSON parse, as Trove's stream path uses it), and with Trove's own
  typed msgspec decoder, each with nothing else; then a whole read (`read_events`,
  every event held, as `trove threads` and fork read a log) without and with the
  log's replay snapshot beside it (engine/log/snapshot.py), its checks included;
  and the open with the log's resume
  index beside it (engine/log/resume.py: what a thread quit by its writer opens
  with, replaying nothing), with the surface as the runtime builds it;
* cold open at 10k, 100k and 1M messages (`--cold-sizes`): the one pass in a fresh
  process per run, its time against the floor of decoding every line (typed, none
  held) and its peak RSS against 80 MB, and the next open from the index it wrote;
* resume latency: the real TUI (`trove --thread ID` in a pseudo-terminal,
  started and timed exactly as bench/tui.py times it: spawn -> the end of the
  first frame drawn with the prompt focused and the thread open) on generated
  threads of 10,000, 100,000 and 1,000,000 messages (user prompts and replies;
  the tool results and turn markers come on top), alternating with launches of
  the one baseline (../shared/baseline_app.py), median of N, against <= 1.15 x
  the baseline's launch each (DESIGN.md), and RSS when ready against <= 80 MB
  at 1,000,000. Each is opened cold (nothing kept from a last session) and then
  as it was quit; the target is the second's. The generated threads are kept
  under the system's temporary directory between runs (`FIXTURES`): writing the
  million-message one takes a while.

From a git worktree run it with `PYTHONPATH=.`: the editable install points at
the main checkout, and `python bench/...` puts bench/, not the root, on the path.

Figures are printed, never asserted: this is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import orjson

from engine import events as ev
from engine.events import KnownEvent
from engine.log import SessionLog, paused_gc, read_events, resume, snapshot
from engine.surface import Surface
from engine.surface.fold import SurfaceFold
from engine.surface.kept import for_log, kept_parts
from engine.threads.paths import LOG_NAME, thread_dir

REPLAY_TARGET = 200_000  # events/s
RESUME_TARGET = 1.15  # x the baseline's launch to a ready prompt, at every size
RSS_TARGET = {1_000_000: 80.0}  # MB when ready, by thread size in messages
FIXTURES = Path(tempfile.gettempdir()) / "trove-bench-log-replay"
"""Where the generated resume threads are kept between runs (by size and generator)."""
GENERATOR = 1
"""Bumped when `generate_events` changes: older fixtures are not reused."""
USER_ID = "local"

_VOCABULARY = (
    "the a of to and in is for that with on as this it be are was by from or an at "
    "function error value return file test config model thread session log event turn "
    "compaction summary archive search result request response stream token context "
    "python async await import class def self list dict string number none true false "
    "please could you explain why how what when where which should would can does "
    "fix bug issue change update add remove rename refactor benchmark measure latency"
)
WORDS = tuple(_VOCABULARY.split())
CJK = "上下文压缩会话日志搜索结果模型请求回复线程摘要"


def _text(rng: random.Random, mean_chars: int) -> str:
    """Prose-like text of roughly `mean_chars` characters, sometimes with CJK runs."""
    target = max(8, int(rng.expovariate(1 / mean_chars)))
    parts: list[str] = []
    size = 0
    while size < target:
        if rng.random() < 0.03:
            word = "".join(rng.choice(CJK) for _ in range(rng.randint(2, 6)))
        else:
            word = rng.choice(WORDS)
        if rng.random() < 0.08:
            word += rng.choice(".,:;?")
        if rng.random() < 0.02:
            word += "\n"
        parts.append(word)
        size += len(word) + 1
    return " ".join(parts)


def generate_events(n: int, seed: int = 1) -> Iterator[dict[str, Any]]:
    """Exactly `n` events shaped like the driver writes them (the last turn may be open)."""
    rng = random.Random(seed)
    moment = datetime(2025, 1, 1, tzinfo=UTC)
    seq = 0
    turn = 0
    calls = 0

    def event(kind: type[ev.Event], **fields: Any) -> dict[str, Any]:
        nonlocal seq, moment
        seq += 1
        moment += timedelta(milliseconds=rng.randint(1, 4000))
        ts = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
        return {"seq": seq, "ts": ts, "kind": ev.kind_of(kind), **fields}

    def usage(prompt_chars: int, completion_chars: int) -> dict[str, int]:
        prompt, completion = prompt_chars // 4, completion_chars // 4
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    context_chars = 0
    while True:
        turn_events: list[dict[str, Any]] = []
        if rng.random() < 0.05:
            turn_events.append(event(ev.UserMessage, text=_text(rng, 120), source="inject"))
        prompt = _text(rng, 180)
        queued = event(ev.InboxQueued, text=prompt, waking=True, placement="follow-up")
        turn += 1
        turn_events.append(queued)
        turn_events.append(event(ev.TurnStart, turn=turn, items=[queued["seq"]]))
        turn_events.append(event(ev.UserMessage, text=prompt, item_id=queued["seq"]))
        context_chars += len(prompt)
        for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):  # tool round trips
            round_calls = []
            for _ in range(rng.choice((1, 1, 2))):
                calls += 1
                name = rng.choice(("history_search", "history_read", "task_note"))
                args = json.dumps({"query": _text(rng, 30)}, ensure_ascii=False)
                round_calls.append({"id": f"call_{calls:06d}", "name": name, "arguments": args})
            preface = _text(rng, 60) if rng.random() < 0.3 else ""
            turn_events.append(
                event(
                    ev.AssistantMessage,
                    content=preface,
                    tool_calls=round_calls,
                    usage=usage(context_chars, len(preface) + 80),
                    model="gpt-4o-mini",
                    finish_reason="tool_calls",
                )
            )
            for call in round_calls:
                result = _text(rng, 900)
                context_chars += len(result)
                turn_events.append(
                    event(ev.ToolResult, call_id=call["id"], name=call["name"], content=result)
                )
        reply = _text(rng, 1200)
        context_chars += len(reply)
        turn_events.append(
            event(
                ev.AssistantMessage,
                content=reply,
                tool_calls=[],
                usage=usage(context_chars, len(reply)),
                model="gpt-4o-mini",
                finish_reason="stop",
            )
        )
        turn_events.append(event(ev.TurnEnd, turn=turn, status="ok"))
        for item in turn_events:
            if item["seq"] > n:
                return
            yield item


def write_log(path: Path, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for event in generate_events(n):
            fh.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")


_MESSAGES = frozenset({ev.kind_of(ev.UserMessage), ev.kind_of(ev.AssistantMessage)})


def message_log(messages: int) -> tuple[Path, int]:
    """The generated log of a thread of `messages` user and assistant messages (kept in
    `FIXTURES`, written once), and how many events it holds."""
    path = FIXTURES / f"messages-{messages}-g{GENERATOR}.jsonl"
    count_path = path.with_suffix(".events")
    if path.is_file() and count_path.is_file():
        return path, int(count_path.read_text())
    FIXTURES.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    seen = events = 0
    with partial.open("wb") as fh:
        for event in generate_events(1 << 62):
            fh.write(orjson.dumps(event) + b"\n")
            events += 1
            seen += event["kind"] in _MESSAGES
            if seen >= messages:
                break
    partial.replace(path)
    count_path.write_text(str(events))
    return path, events


def time_decode_floor(path: Path, typed: bool) -> float:
    """Reading the file and parsing every line, and nothing else (collection paused, as
    replay pauses it): with orjson into plain dicts, or with Trove's typed decoder."""
    decode = msgspec.json.Decoder(KnownEvent).decode if typed else orjson.loads
    gc.collect()
    with paused_gc():
        start = time.perf_counter()
        events = [decode(line) for line in path.read_bytes().split(b"\n") if line]
        elapsed = time.perf_counter() - start
    del events
    return elapsed


def time_replay(path: Path) -> tuple[float, int]:
    """An open with no resume index: the one pass (engine.log.cold) with the surface folded,
    and the index it writes (removed after)."""
    resume.discard(path)
    gc.collect()
    start = time.perf_counter()
    log = SessionLog.open(path, fold=SurfaceFold)
    surface = for_log(log)
    elapsed = time.perf_counter() - start
    log.close()
    resume.discard(path)
    if not surface.tokens:
        raise SystemExit("bench: the generated log produced an empty surface")
    return elapsed, len(log.events)


def time_whole(path: Path) -> float:
    """A whole read (`read_events`, what `trove threads`, fork and reports read) and the
    surface replayed from it: every event held."""
    gc.collect()
    start = time.perf_counter()
    surface = Surface.from_events(read_events(path).events)
    elapsed = time.perf_counter() - start
    if not surface.entries:
        raise SystemExit("bench: the generated log produced an empty surface")
    return elapsed


def time_index_open(path: Path, runs: int) -> tuple[float, int, int]:
    """The median open of the log with its resume index beside it (written as a clean exit
    writes it), with its surface as the runtime builds it (entries not read), then the
    index removed; (seconds, events held in memory, bytes of the index)."""
    log = SessionLog.open(path)
    log.keep_index(*kept_parts(for_log(log), len(log.file_events)))
    log.close()
    times = []
    held = 0
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        log = SessionLog.open(path)
        for_log(log)
        times.append(time.perf_counter() - start)
        held = len(log.file_events) - log.file_events.held_from
        log.close()
    index = resume.path_for(path)
    size = index.stat().st_size
    index.unlink()
    return statistics.median(times), held, size


def time_snapshot_replay(path: Path, runs: int) -> tuple[float, int]:
    """The median `time_whole` with the log's replay snapshot beside it, then removed;
    (seconds, events from the snapshot)."""
    whole = read_events(path)
    snapshot.write(path, whole.events, whole.good_bytes)
    del whole
    times = [time_whole(path) for _ in range(runs)]
    kept = read_events(path).from_snapshot
    snapshot.path_for(path).unlink(missing_ok=True)
    return statistics.median(times), kept


COLD_RSS_TARGET = 80.0  # MB, peak, at every size (DESIGN.md's resume memory bound)
COLD_FLOOR_TARGET = 2.0  # x the msgspec decode floor
_COLD_CHILD = """
import gc, json, sys, time
from pathlib import Path
path = Path(sys.argv[1])
from engine.log import SessionLog
from engine.surface.fold import SurfaceFold
from engine.surface.kept import for_log

def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0

gc.collect()
start = time.perf_counter()
log = SessionLog.open(path, fold=SurfaceFold)
surface = for_log(log)
cold = time.perf_counter() - start
rss = peak()
events, deferred = len(log.file_events), surface.deferred
log.close()
start = time.perf_counter()
log = SessionLog.open(path, fold=SurfaceFold)
for_log(log)
again = time.perf_counter() - start
kept = log.kept_events
log.close()
print(json.dumps({"cold": cold, "rss": rss, "again": again, "events": events,
                  "deferred": deferred, "kept": kept}))
"""
_FLOOR_CHILD = """
import gc, sys, time
import msgspec
from engine.events import KnownEvent
decode = msgspec.json.Decoder(KnownEvent).decode
gc.disable()
start = time.perf_counter()
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        decode(line)
print(time.perf_counter() - start)
"""


def _child(code: str, *args: str) -> str:
    """Run `code` in a fresh interpreter (its own peak RSS), from the repository."""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], check=True, capture_output=True, text=True, env=env
    )
    return done.stdout.strip().splitlines()[-1]


def time_cold_open(root: Path, messages: int, runs: int) -> dict[str, Any]:
    """A thread with no resume index opened by its writer (`SessionLog.open` with the surface
    folded, then `for_log`), in a fresh process per run: the one pass (engine.log.cold) and
    the index it writes, then the next open from that index; beside the floor of decoding
    every line with the typed msgspec decoder and holding none. Medians of `runs`."""
    source, count = message_log(messages)
    target = root / f"cold-{messages}" / LOG_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    colds: list[float] = []
    rsses: list[float] = []
    agains: list[float] = []
    floors: list[float] = []
    for _ in range(runs):
        shutil.copyfile(source, target)
        for derived in target.parent.iterdir():
            if derived.name != LOG_NAME:
                derived.unlink()
        os.sync()
        figures = json.loads(_child(_COLD_CHILD, str(target)))
        if not figures["deferred"] or figures["kept"] != count:
            raise SystemExit(f"bench: the cold open of {messages:,} messages kept no surface")
        colds.append(figures["cold"])
        rsses.append(figures["rss"])
        agains.append(figures["again"])
        floors.append(float(_child(_FLOOR_CHILD, str(source))))
    target.unlink()
    return {
        "events": count,
        "bytes": source.stat().st_size,
        "cold": statistics.median(colds),
        "rss": statistics.median(rsses),
        "again": statistics.median(agains),
        "floor": statistics.median(floors),
        "runs": colds,
    }


def print_cold(root: Path, sizes: list[int], runs: int) -> None:
    print()
    print(
        "cold open: a thread with no resume index (a crash, an older log, an index set aside),"
        " opened by its writer in one pass, in a fresh process; peak RSS (VmHWM)"
    )
    for messages in sizes:
        got = time_cold_open(root, messages, runs)
        ratio = got["cold"] / got["floor"]
        print(
            f"  {messages:>9,} messages ({got['events']:,} events, "
            f"{got['bytes'] / 2**20:,.0f} MiB): {got['cold']:.2f} s "
            f"(runs {' '.join(f'{v:.2f}' for v in got['runs'])}), "
            f"decode floor {got['floor']:.2f} s, next open {got['again'] * 1000:.1f} ms"
        )
        print(
            f"  cold open {messages:,} messages / decode floor: {ratio:.2f} x   "
            f"target <= {COLD_FLOOR_TARGET} x  {_verdict(ratio <= COLD_FLOOR_TARGET)}"
        )
        print(
            f"  cold open {messages:,} messages, peak RSS: {got['rss']:.0f} MB   "
            f"target <= {COLD_RSS_TARGET:.0f} MB  {_verdict(got['rss'] <= COLD_RSS_TARGET)}"
        )
    print(f"  (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")


def _bench_tui() -> Any:
    """bench/tui.py, loaded under another name (it is named like the `tui` package)."""
    spec = importlib.util.spec_from_file_location("bench_tui", Path(__file__).with_name("tui.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fresh(home: Path) -> Path:
    """The thread's directory in `home`, with nothing kept from a last session (no drawn
    lines, replay snapshot or resume index): what a crash or an upgrade leaves."""
    directory = thread_dir(home, USER_ID, "resume")
    for child in directory.iterdir():
        if child.name != LOG_NAME and child.is_file():
            child.unlink()
    return directory


def time_resume(
    root: Path, sizes: list[int], runs: int
) -> tuple[list[float], dict[int, dict[str, list[float]]], dict[int, int]]:
    """Spawn -> ready of `trove --thread` per size, cold and then as quit, alternating with
    the baseline's launch after one warm-up round of each.

    Each size's thread is a copy of the generated log in a home of its own; after each
    pair of runs the log is cut back to its generated length
    (a resume appends an end-seed, a quit may append a draft) and what the quit kept
    beside it is removed. Returns the baseline's times (ms), per size the resumed, cold
    and RSS (MB) figures, and per size the events of its log."""
    bt = _bench_tui()
    bare: list[float] = []
    figures: dict[int, dict[str, list[float]]] = {
        size: {"resumed": [], "cold": [], "rss": [], "cold_rss": []} for size in sizes
    }
    homes: dict[int, tuple[Path, int]] = {}
    counts: dict[int, int] = {}
    for size in sizes:
        source, counts[size] = message_log(size)
        home = root / f"resume-home-{size}"
        target = thread_dir(home, USER_ID, "resume") / LOG_NAME
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        homes[size] = (home, source.stat().st_size)
    with bt.Server("stream") as idle:  # never called: opening a thread makes no request
        config = bt.write_config(root, idle.base_url)
        launch_args = ["--home", str(root / "launch-home"), "--config", str(config)]
        for run in range(runs + 1):  # the first round warms the page cache and .pyc files
            spawned, records = bt.run_child("launch", "bare", launch_args, [], 60)
            if run:
                bare.append((records[0]["ready"] - spawned) * 1000)
            for size in sizes:
                home, length = homes[size]
                args = ["--home", str(home), "--config", str(config), "--thread", "resume"]
                log = _fresh(home) / LOG_NAME
                # Cold first (nothing kept from a last session); its quit, as a user's
                # Ctrl+Q, keeps what the usual resume that follows opens with.
                try:
                    spawned, records = bt.run_child("resume", "trove", args, [], 600)
                    if run:
                        figures[size]["cold"].append((records[0]["ready"] - spawned) * 1000)
                        figures[size]["cold_rss"].append(records[0]["rss"]["VmRSS"])
                    # What the cold run's quit wrote (a long log's replay snapshot is about
                    # its size) goes to the disk now, not during the next run.
                    os.sync()
                    spawned, records = bt.run_child("resume", "trove", args, [], 600)
                    if run:
                        figures[size]["resumed"].append((records[0]["ready"] - spawned) * 1000)
                        figures[size]["rss"].append(records[0]["rss"]["VmRSS"])
                finally:
                    os.truncate(log, length)
                    _fresh(home)
                    os.sync()
    return bare, figures, counts


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISS"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--resume-sizes",
        type=int,
        nargs="*",
        default=[10_000, 100_000, 1_000_000],
        help="threads to resume, in messages (none: skip the resume rows)",
    )
    parser.add_argument(
        "--cold-sizes",
        type=int,
        nargs="*",
        default=[10_000, 100_000, 1_000_000],
        help="threads to open cold, in messages (none: skip the cold rows)",
    )
    parser.add_argument("--cold-runs", type=int, default=3)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="trove-bench-") as tmp:
        root = Path(tmp)
        print(f"python {sys.version.split()[0]}; median of {args.runs} runs each")
        print()
        print("log replay: SessionLog.open with no resume index (one pass) + for_log")
        print(
            f"  {'events':>8}  {'log size':>9}  {'B/event':>7}  {'median':>9}  {'events/s':>9}"
            f"  {'orjson':>9}  {'typed':>9}"
        )
        for size in args.sizes:
            path = root / f"replay-{size}" / LOG_NAME
            write_log(path, size)
            times = []
            count = 0
            for _ in range(args.runs):
                elapsed, count = time_replay(path)
                times.append(elapsed)
            floor = statistics.median(time_decode_floor(path, False) for _ in range(args.runs))
            typed = statistics.median(time_decode_floor(path, True) for _ in range(args.runs))
            median = statistics.median(times)
            rate = count / median
            size_bytes = path.stat().st_size
            print(
                f"  {count:>8,}  {size_bytes / 2**20:>5.1f} MiB  {size_bytes // count:>7,}"
                f"  {median * 1000:>6.1f} ms  {rate:>9,.0f}"
                f"  {count / floor:>9,.0f}  {count / typed:>9,.0f}"
                f"  target >= {REPLAY_TARGET:,} events/s  {_verdict(rate >= REPLAY_TARGET)}"
            )
            whole = statistics.median(time_whole(path) for _ in range(args.runs))
            print(
                f"  {'':>8}  {'':>9}  {'':>7}  {whole * 1000:>6.1f} ms"
                f"  {count / whole:>9,.0f}  read whole, every event held (`read_events`)"
            )
            kept_median, kept = time_snapshot_replay(path, args.runs)
            print(
                f"  {'':>8}  {'':>9}  {'':>7}  {kept_median * 1000:>6.1f} ms"
                f"  {count / kept_median:>9,.0f}  read whole from its replay snapshot"
                f" ({kept:,} events; checks included)"
            )
            opened, held, index_size = time_index_open(path, args.runs)
            print(
                f"  {'':>8}  {'':>9}  {'':>7}  {opened * 1000:>6.1f} ms  {'':>9}  opened from"
                f" its resume index, no replay ({held:,} events read, index"
                f" {index_size / 2**20:.1f} MiB; checks included)"
            )
        print(
            "  (floors, events/s: read + parse every line and nothing else; orjson: into plain"
            " dicts, the floor; typed: Trove's msgspec decoder)"
        )

        if args.cold_sizes:
            print_cold(root, args.cold_sizes, args.cold_runs)

        if not args.resume_sizes:
            return 0
        print()
        print(
            "resume: the real TUI, `trove --thread ID` in a pty, spawn -> ready prompt "
            "(as bench/tui.py), alternating with the baseline's launch; opened cold (nothing "
            "kept from a last session), then as it was quit (what Ctrl+Q keeps beside the log)"
        )
        bare, figures, counts = time_resume(root, args.resume_sizes, args.runs)
        base = statistics.median(bare)
        print(f"  baseline launch: {base:.0f} ms (runs {' '.join(f'{v:.0f}' for v in bare)})")
        for size in args.resume_sizes:
            got = figures[size]
            median, cold = statistics.median(got["resumed"]), statistics.median(got["cold"])
            rss, cold_rss = statistics.median(got["rss"]), statistics.median(got["cold_rss"])
            ratio = median / base
            print(
                f"  {size:>9,} messages ({counts[size]:,} events): {median:.0f} ms "
                f"(runs {' '.join(f'{v:.0f}' for v in got['resumed'])}), RSS {rss:.0f} MB; "
                f"cold {cold:.0f} ms (runs {' '.join(f'{v:.0f}' for v in got['cold'])}), "
                f"RSS {cold_rss:.0f} MB"
            )
            print(
                f"  resume {size:,} messages / baseline launch: {ratio:.2f} x   "
                f"target <= {RESUME_TARGET} x  {_verdict(ratio <= RESUME_TARGET)}"
            )
            if size in RSS_TARGET:
                print(
                    f"  resume {size:,} messages, RSS when ready: {rss:.0f} MB   "
                    f"target <= {RSS_TARGET[size]:.0f} MB  {_verdict(rss <= RSS_TARGET[size])}"
                )
            print(
                f"  (cold, after a crash or an upgrade: {cold / base:.2f} x, {cold_rss:.0f} MB; "
                "the target is the usual resume's, of a thread quit with Ctrl+Q)"
            )
        print(f"  (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
