"""Benchmark: what reading a fast stream costs, through Trove's model client alone.

    python bench/stream_read.py [--reply mixed-20000] [--rate 20000] [--runs 3]

The corpus server (bench/_corpus_server.py, a process of its own: real sockets, real
SSE, one token a chunk) streams a corpus reply at the rate asked, and the real
`ModelClient` reads it through the real `openai` SDK with nothing drawn: the reading
alone, which in the app shares the UI loop with every frame and keystroke. Per run: the
rate the server achieved against the rate asked, how long of the stream the client had
not read when the last token went out, and the CPU this process spent per 1,000 tokens
(and as a share of one core over the stream). Issue 27's target: reading 20,000
chunks/s sustained on a 20k-token reply. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench._corpus_server import Server  # noqa: E402
from engine.model import ModelClient  # noqa: E402

ACHIEVED_TARGET = 0.95
UNREAD_TARGET_MS = 50.0


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(server: Server, reply: str, rate: float, runs: int) -> list[dict[str, float]]:
    client = ModelClient(base_url=server.base_url, api_key="bench", model="m", max_retries=0)
    out: list[dict[str, float]] = []
    try:
        await client.prepare()
        for run in range(runs + 1):  # the first run warms the connection and the imports
            started = cpu_seconds()
            await client.complete(
                [{"role": "user", "content": f"corpus {reply} {rate:.0f}"}],
                on_delta=lambda piece: None,
            )
            spent = cpu_seconds() - started
            stream = server.streams.get(timeout=60)
            if not run:
                continue
            per_token = stream["bytes"] / max(1, stream["sent"])
            span = max(1e-9, stream["last"] - stream["first"])
            out.append(
                {
                    "achieved": stream["achieved"] / rate,
                    "unread_ms": stream.get("unread_bytes", 0) / per_token / rate * 1000,
                    "cpu_per_1000": spent * 1000 / stream["sent"] * 1000,
                    "core": spent / span,
                }
            )
    finally:
        await client.aclose()
    return out


def row(figures: list[dict[str, float]], rate: float, reply: str) -> None:
    achieved = min(f["achieved"] for f in figures)
    unread = max(f["unread_ms"] for f in figures)
    cpu = statistics.median(f["cpu_per_1000"] for f in figures)
    core = statistics.median(f["core"] for f in figures)
    line = (
        f"   reading {reply} at {rate:,.0f} tok/s: sent at {achieved:.0%} of the"
        f" rate, {unread:.0f} ms unread at the last token (worst of {len(figures)});"
        f" {cpu:.0f} ms of CPU per 1,000 tokens, {core:.0%} of a core"
    )
    ok = achieved >= ACHIEVED_TARGET and unread <= UNREAD_TARGET_MS
    line += (
        f"   target >= {ACHIEVED_TARGET:.0%}, <= {UNREAD_TARGET_MS:.0f} ms unread"
        f"   {'meets target' if ok else 'MISSES target'}"
    )
    print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reply", default="mixed-20000")
    parser.add_argument("--rate", type=float, default=20000.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    server = Server()
    try:
        print(f"reading a fast stream, nothing drawn ({args.runs} runs each, after one to warm)")
        row(asyncio.run(measure(server, args.reply, args.rate, args.runs)), args.rate, args.reply)
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
