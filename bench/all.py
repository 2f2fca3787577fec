"""Every benchmark in one command, then one table: each figure beside its target.

    python bench/all.py [--only tui,content,scroll,log_replay,rewind,...] [--full]

Each benchmark runs as its own process, one after another (never two at
once: on 2 cores they would skew each other), with its whole output shown as
it runs. Every line a benchmark prints with a target is collected, and the
table at the end lists them with pass or MISS, so a miss is read in one place
and never hidden between pages of detail. A benchmark whose file is missing (one not yet
merged) is skipped with a MISS row, so the table never reads as complete without it.
By default bench/content.py runs --quick (every reply at the rates the lag target holds
at, one at the slowest); --full streams every reply at every rate. Figures are printed,
not asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ORDER = (
    "tui",
    "request_cost",
    "stream_read",
    "content",
    "tmux_stream",
    "scroll",
    "log_replay",
    "rewind",
    "compaction",
    "archive",
    "search_all",
    "local",
)
QUICK = {"content": ("--quick",)}
"""Arguments each benchmark gets unless --full is given."""


def verdict(line: str) -> str:
    """How the benchmark judged this figure, from the words it printed."""
    if "MISS" in line:
        return "MISS"
    lowered = line.lower()
    if "meets target" in lowered or "pass" in lowered or re.search(r"\bok\b", lowered):
        return "pass"
    return "?"


def _env() -> dict[str, str]:
    """This checkout first on the import path, whatever copy of Trove is installed."""
    env = dict(os.environ)
    root = str(BENCH.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def run(name: str, args: tuple[str, ...] = ()) -> list[str]:
    """Run one benchmark, echoing its output; the lines that state a target.

    The disk is synced first: the benchmark before may leave hundreds of MB written but
    not yet on disk (threads of 100,000 messages, archives at their ceiling), and their
    write-back would otherwise land in this one's timings."""
    path = BENCH / f"{name}.py"
    if not path.exists():
        print(f"\n=== bench/{name}.py is missing: skipped", flush=True)
        return [f"bench/{name}.py is missing: its targets are not measured  MISS"]
    os.sync()
    print(f"\n=== bench/{name}.py {' '.join(args)}".rstrip(), flush=True)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, str(path), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=BENCH.parent,
        env=_env(),
    )
    assert process.stdout is not None
    judged: list[str] = []
    for line in process.stdout:
        print(line, end="", flush=True)
        if "target" in line.lower() and verdict(line) != "?":
            judged.append(" ".join(line.split()))
    code = process.wait()
    if code:
        judged.append(f"exited with status {code}: its figures are incomplete  MISS")
    print(f"=== bench/{name}.py took {time.perf_counter() - started:.0f} s", flush=True)
    return judged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(ORDER), help="comma-separated benchmarks")
    parser.add_argument("--full", action="store_true", help="no benchmark in its quick form")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in ORDER]
    if unknown:
        print(f"bench/all.py: unknown benchmark {unknown[0]!r} (one of {', '.join(ORDER)})")
        return 2
    print(f"load average {os.getloadavg()[0]:.2f} at start (other work skews every figure)")
    started = time.perf_counter()
    table = [
        (name, line)
        for name in chosen
        for line in run(name, () if args.full else QUICK.get(name, ()))
    ]
    print("\n=== every figure against its target (DESIGN.md)")
    width = max((len(name) for name, _ in table), default=0)
    for name, line in table:
        print(f"{verdict(line):4}  {name:<{width}}  {line}")
    misses = sum(verdict(line) == "MISS" for _, line in table)
    print(
        f"{len(table) - misses} pass, {misses} MISS; load average {os.getloadavg()[0]:.2f}; "
        f"{(time.perf_counter() - started) / 60:.0f} min"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
