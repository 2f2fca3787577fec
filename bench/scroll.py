"""Benchmark: PageUp held back through a long thread, in the real app, in a real terminal.

    python bench/scroll.py [--sizes 10000,100000] [--seconds 45] [--rate 30]

Each size's thread (bench/log_replay.py's generated log of that many messages, written
once and kept) is opened with `trove --thread` in tmux at 120x40, the prompt focused.
PageUp is then sent at --rate keys a second, as a held key repeats, for --seconds (or
until the thread's first message is reached). Measured:

* echo: per key, from tmux being told to send it to the first screen that differs
  (read through a tmux control client every few ms, bench/_terminal.py); a key that
  moves nothing (the view waits at the top for earlier messages) waits for the next
  change. Max and p95 against a frame budget of two frames (33 ms);
* loop stalls: inside the app, a 5 ms heartbeat on the UI loop (how late it wakes),
  overall and while the window is growing (load earlier), against 33 and 16 ms;
* RSS of the app when the thread is open and after the scroll back;
* reading position: after the hold, PageUp until the window starts growing, the screen
  then and once it has stopped: the transcript's rows must be the same.

The app runs with a probe (this file's --child mode) that wraps `App.run` with an
`auto_pilot` which only watches; it writes its figures to a file the parent reads.
Figures are printed beside their targets (issue 27), never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

SIZE = (120, 40)
POLL = 0.003
TARGET_FRAME_MS = 33.0
TARGET_STALL_MS = 16.0
SCROLLBAR_CELLS = " ▁▂▃▄▅▆▇█▔"
PROBE_EVERY = 0.05
"""Seconds between two writes of the probe's figures."""


# -- child: the app with a probe ---------------------------------------------------------


def child(stats: Path, argv: list[str]) -> int:
    """Run `trove argv` with a probe on its loop that writes figures to `stats`."""
    import asyncio

    import textual.app

    original = textual.app.App.run

    def rss_mb() -> float:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def write_stats(path: Path, text: str) -> None:
        path.with_suffix(".tmp").write_text(text)
        path.with_suffix(".tmp").replace(path)

    writer = ThreadPoolExecutor(max_workers=1)

    async def probe(pilot: Any) -> None:
        app = pilot.app
        figures: dict[str, Any] = {"worst": 0.0, "worst_growing": 0.0, "lates": []}
        wrote = time.perf_counter()
        transcript: Any = None
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            late = (now - before - 0.005) * 1000
            if transcript is None or not transcript.is_attached:
                # Looked up once, not every beat: a query walks every widget mounted, and
                # the probe's own work must not be what it measures.
                found = app.screen.query("#transcript") if app.screen is not None else []
                transcript = found.first() if found else None
            growing = bool(
                transcript is not None
                and (transcript._earlier_to is not None or transcript._newer_to is not None)
            )
            if figures.get("measuring"):
                figures["worst"] = max(figures["worst"], late)
                figures["lates"].append(round(late, 1))
                if growing:
                    figures["worst_growing"] = max(figures["worst_growing"], late)
            if now - wrote >= PROBE_EVERY and transcript is not None:
                wrote = now
                control = stats.with_suffix(".go")
                if control.exists() and not figures.get("measuring"):
                    figures.update(measuring=True, worst=0.0, worst_growing=0.0, lates=[])
                figures.update(
                    ready=getattr(app, "runtime", None) is not None,
                    rss=rss_mb(),
                    start=transcript._start,
                    scroll_y=transcript.scroll_y,
                    growing=growing or bool(transcript.finishing()),
                    widgets=len(transcript.children),
                )
                # Written by one thread, in order: the probe's file work is not a stall of
                # the loop it measures.
                writer.submit(write_stats, stats, json.dumps(figures))

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs["auto_pilot"] = probe
        return original(self, *args, **kwargs)

    textual.app.App.run = run  # type: ignore[method-assign]
    from cli.main import main

    return int(main(argv) or 0)


# -- parent: tmux, keys, screens ---------------------------------------------------------


def read_stats(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def wait_stats(path: Path, ready: Any, what: str, limit: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + limit
    while True:
        stats = read_stats(path)
        if stats and ready(stats):
            return stats
        if time.monotonic() > deadline:
            raise RuntimeError(f"the app never reached {what} (last: {stats})")
        time.sleep(0.02)


def transcript_rows(rows: list[str]) -> list[str]:
    """The screen's rows above the prompt, scroll bar and load rows left out."""
    from bench._terminal import plain

    texts = [plain(row) for row in rows]
    top = max((i for i, t in enumerate(texts) if "▔▔▔" in t), default=len(texts))
    # The scroll bar is the row's last cell: wide characters shift where it is cut.
    return [t.rstrip(SCROLLBAR_CELLS) for t in texts[1:top] if "earlier events" not in t]


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"


def run_size(
    tmux: Any, env: dict[str, str], work: Path, messages: int, seconds: float, rate: float
) -> dict[str, Any]:
    from bench.log_replay import message_log
    from engine.threads.paths import LOG_NAME, thread_dir

    source, events = message_log(messages)
    home = work / f"home-{messages}"
    log = thread_dir(home, "local", "scroll") / LOG_NAME
    log.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, log)
    config = work / "config.yaml"
    config.write_text(
        "model:\n  base_url: http://127.0.0.1:9/v1\n  api_key: bench\n  name: scripted-model\n",
        encoding="utf-8",
    )
    stats = work / f"stats-{messages}.json"
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", str(stats), "--"]
    argv += ["--home", str(home), "--config", str(config), "--thread", "scroll"]
    tmux.start(argv, env, ROOT, SIZE)
    out: dict[str, Any] = {"messages": messages, "events": events}
    try:
        opened = wait_stats(stats, lambda s: s.get("ready") and not s.get("growing"), "ready")
        time.sleep(1.0)  # post-open work (the opening chunk's fill, warm-ups) settles
        opened = read_stats(stats)
        out["rss_start"] = opened["rss"]
        out["start_before"] = opened["start"]
        stats.with_suffix(".go").write_text("")
        wait_stats(stats, lambda s: s.get("measuring"), "measuring")
        sent: list[float] = []
        changes: list[float] = []
        screen = tmux.screen()
        due = time.monotonic()
        end = due + seconds
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= due:
                sent.append(time.monotonic())
                tmux.keys("PageUp")
                due += 1 / rate
                if len(sent) % 30 == 0:
                    state = read_stats(stats)
                    if state.get("start") == 0 and state.get("scroll_y") == 0:
                        break
            shown = tmux.screen()
            if shown != screen:
                screen = shown
                changes.append(time.monotonic())
            time.sleep(max(0.0, min(POLL, due - time.monotonic())))
        # Keys still unanswered get the changes that come after the last one.
        settle_until = time.monotonic() + 2.0
        while time.monotonic() < settle_until:
            shown = tmux.screen()
            if shown != screen:
                screen = shown
                changes.append(time.monotonic())
            time.sleep(POLL)
        echoes: list[float] = []
        at = 0
        for key in sent:
            while at < len(changes) and changes[at] < key:
                at += 1
            if at < len(changes):
                echoes.append((changes[at] - key) * 1000)
        after = read_stats(stats)
        out.update(
            keys=len(sent),
            echo_p95=pct(echoes, 0.95),
            echo_max=max(echoes, default=0.0),
            answered=len(echoes),
            stall_max=after["worst"],
            stall_p95=pct(after["lates"], 0.95),
            stall_growing=after["worst_growing"],
            rss_after=after["rss"],
            start_after=after["start"],
            widgets=after["widgets"],
        )
        out["kept"] = reading_kept(tmux, stats)
    finally:
        if tmux.running():
            tmux.keys("C-q")
        deadline = time.monotonic() + 10
        while tmux.running() and time.monotonic() < deadline:
            time.sleep(0.05)
        tmux.stop()
    return out


def reading_kept(tmux: Any, stats: Path) -> str:
    """PageUp, one key at a time, until one makes the window grow: the transcript's rows
    once that key has moved the view, and again once the window has stopped growing."""
    wait_stats(stats, lambda s: not s.get("growing"), "a still window", 60)
    for _ in range(200):
        start = read_stats(stats).get("start")
        shown = tmux.screen()
        tmux.keys("PageUp")
        deadline = time.monotonic() + 0.5
        while tmux.screen() == shown and time.monotonic() < deadline:
            time.sleep(POLL)
        before = transcript_rows(tmux.screen())
        time.sleep(3 * PROBE_EVERY)  # the probe's figures are that old at most
        state = read_stats(stats)
        if state.get("growing") or state.get("start") != start:
            wait_stats(stats, lambda s: not s.get("growing"), "the window grown", 60)
            after = transcript_rows(tmux.screen())
            if before != after and os.environ.get("TROVE_BENCH_SCROLL_SHOW"):
                print("\n".join(["before:", *before, "after:", *after]))
            return "yes" if before == after else "no"
        if state.get("start") == 0:
            return "not seen (the thread's start was reached)"
    return "not seen"


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["--child"]:
        return child(Path(args_in[1]), args_in[3:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--seconds", type=float, default=45.0)
    parser.add_argument("--rate", type=float, default=30.0)
    args = parser.parse_args(args_in)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    from bench._terminal import Tmux, available
    from bench.content import app_env

    if not available():
        print("bench/scroll.py: tmux is not installed; no figures   target: every row  MISS")
        return 1
    print(
        f"PageUp held at {args.rate:.0f}/s for up to {args.seconds:.0f} s, tmux "
        f"{SIZE[0]}x{SIZE[1]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    work = Path(tempfile.mkdtemp(prefix="trove-bench-scroll-"))
    env = app_env(work)
    tmux = Tmux(env)
    results = []
    try:
        for size in (int(s) for s in args.sizes.split(",") if s):
            try:
                results.append(run_size(tmux, env, work, size, args.seconds, args.rate))
            except RuntimeError as exc:
                print(f"   {size:,} messages: {exc}   target: every row  MISS")
    finally:
        tmux.close()
        shutil.rmtree(work, ignore_errors=True)
    for r in results:
        n = f"{r['messages']:,} messages"
        back = r["start_before"] - r["start_after"]
        print(
            f"   {n}: {r['keys']} PageUps ({r['answered']} answered), window start moved "
            f"back {back:,} of {r['events']:,} events, {r['widgets']} widgets mounted at the end"
        )
        ok = r["echo_max"] <= TARGET_FRAME_MS
        print(
            f"   scroll back {n}: key to screen p95 {r['echo_p95']:.0f} ms, max "
            f"{r['echo_max']:.0f} ms   target max <= {TARGET_FRAME_MS:.0f} ms   {verdict(ok)}"
        )
        ok = r["stall_max"] <= TARGET_FRAME_MS
        print(
            f"   UI loop stall {n}: p95 {r['stall_p95']:.0f} ms, max {r['stall_max']:.0f} ms   "
            f"target max <= {TARGET_FRAME_MS:.0f} ms   {verdict(ok)}"
        )
        ok = r["stall_growing"] <= TARGET_STALL_MS
        print(
            f"   load earlier stall {n}: max {r['stall_growing']:.0f} ms   "
            f"target <= {TARGET_STALL_MS:.0f} ms   {verdict(ok)}"
        )
        grown = r["rss_after"] - r["rss_start"]
        ok = grown <= 20
        print(
            f"   RSS {n}: {r['rss_start']:.0f} MB open, {r['rss_after']:.0f} MB after scrolling "
            f"back   target flat (<= +20 MB)   {verdict(ok)}"
        )
        ok = r["kept"] == "yes"
        print(
            f"   reading position kept on load earlier {n}: {r['kept']}   target yes   "
            f"{verdict(ok)}"
        )
    print(f"(load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
