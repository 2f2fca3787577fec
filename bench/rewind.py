"""Benchmark: what /retry, /edit and an undone retry cost the UI loop on a long thread.

    python bench/rewind.py [--runs 9] [--sizes 10000 100000]

Each writes one `session/rewind` line on the UI loop (fsynced), and whatever holds
state folded from the thread's line (the line's state, the surface the model is sent)
changes with it. Generated threads (bench/log_replay.py's, realistic events) are opened
as a user reopens them, read whole (a first open) and from the resume index (as a
thread quit with Ctrl+Q opens; its surface not yet read), and the driver's own calls
are timed, each on its own as the loop runs it:

* /retry: `Driver.regenerate` (the rewind to the last prompt, the turn scheduled);
* an undone retry: the retry cancelled before it ran (its undo rewinds back);
* /edit sent: `engine.runtime.rewind.resend` (the rewind carrying the edited text).

Figures are the median of N runs, each on a fresh copy, against DESIGN.md's bound on
work on the UI loop (it never stalls over 16 ms). The fsync of the line is in each
figure (it is a power cut's guarantee) and printed on its own beside them: it is the
disk's, not the thread's. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.log_replay import write_log
from engine.driver import Driver
from engine.log import SessionLog
from engine.runtime.commands_replies import retry_after
from engine.runtime.rewind import last_point, resend
from engine.surface.kept import for_log, kept_parts

LOOP_TARGET_MS = 16.0
"""DESIGN.md: the UI loop never stalls over 16 ms."""


class _NoModel:
    """No turn runs here: each one is cancelled before its first step."""


def _open(source: Path, root: Path, *, indexed: bool) -> SessionLog:
    path = root / "session.jsonl"
    shutil.copyfile(source, path)
    if indexed:
        log = SessionLog.open(path)
        surface = for_log(log)
        assert log.keep_index(*kept_parts(surface, len(log.file_events)))
        log.close()
    os.sync()  # a thread's older lines are on disk: the rewind's fsync writes only its own
    return SessionLog.open(path)


async def _one(source: Path, root: Path, *, indexed: bool) -> dict[str, float]:
    figures: dict[str, float] = {}
    log = _open(source, root, indexed=indexed)
    driver = Driver(log, _NoModel(), surface=for_log(log))  # type: ignore[arg-type]
    try:
        after = retry_after(log)  # type: ignore[arg-type]
        started = time.perf_counter()
        task = driver.regenerate(after)
        figures["/retry"] = time.perf_counter() - started
        assert task is not None
        task.cancel()  # before its first step: the retry is undone in its done-callback
        started = time.perf_counter()
        await asyncio.wait({task})
        figures["undone retry"] = time.perf_counter() - started
        point = last_point(log)
        assert point is not None
        started = time.perf_counter()
        resend(driver, log, point.turn, "the last prompt, said better")
        figures["/edit sent"] = time.perf_counter() - started
        driver.cancel()  # its turn is claimed, not started: the prompt stays queued
        started = time.perf_counter()
        log.flush()
        figures["fsync alone"] = time.perf_counter() - started
    finally:
        await driver.aclose()
        log.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}; median of {args.runs} runs each")
    with tempfile.TemporaryDirectory(prefix="trove-bench-rewind-") as tmp:
        root = Path(tmp)
        for size in args.sizes:
            source = root / f"log-{size}.jsonl"
            write_log(source, size)
            for indexed in (False, True):
                how = "from its resume index" if indexed else "read whole"
                runs: list[dict[str, Any]] = []
                for run in range(args.runs):
                    where = root / f"run-{size}-{indexed}-{run}"
                    where.mkdir()
                    runs.append(asyncio.run(_one(source, where, indexed=indexed)))
                    shutil.rmtree(where)
                print(f"\n{size:,} events, opened {how}: on the UI loop")
                for what in ("/retry", "undone retry", "/edit sent"):
                    ms = statistics.median(r[what] for r in runs) * 1000
                    verdict = "ok" if ms <= LOOP_TARGET_MS else "MISS"
                    print(
                        f"  {what:<13} {ms:7.2f} ms   target <= {LOOP_TARGET_MS:.0f} ms"
                        f" at {size:,} events ({how})  {verdict}"
                    )
                fsync = statistics.median(r["fsync alone"] for r in runs) * 1000
                print(f"  {'(fsync alone':<13} {fsync:7.2f} ms, in each figure above)")
    print(f"\n(load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
