"""Benchmark: what sending a request costs the UI loop, by the length of the history sent.

    python bench/request_cost.py [--sizes 100,1000,10000] [--runs 5]

Each run sends one streamed request (a short scripted reply) through the real
`ModelClient` and the real `openai` SDK to the scripted server over a real socket,
with a history of N messages (user, assistant with a tool call, tool result; about
the size of real turns). The server runs in a process of its own, as a real one
does (in this process its parse of a long body would hold the interpreter's lock).
A probe on the same loop sleeps 1 ms at a time; the bench prints the loop's longest
stall during the request (the time a keystroke would wait) beside the UI loop's
16 ms budget, and the SDK's typed transform of the same history (what each request
ran on the loop before Trove encoded the body itself) beside it.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench._loop_stall import LoopStall  # noqa: E402
from engine.model import ModelClient  # noqa: E402

STALL_TARGET_MS = 16.0


def history(messages: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    n = 0
    while len(out) < messages:
        call = f"call_{n}"
        out.append({"role": "user", "content": f"question {n}: " + "why does it fail " * 8})
        out.append(
            {
                "role": "assistant",
                "content": "Because " + "the cache was stale " * 20,
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": "history_search", "arguments": '{"query":"x"}'},
                    }
                ],
            }
        )
        out.append({"role": "tool", "tool_call_id": call, "content": "no match " * 10})
        n += 1
    return out[:messages]


async def longest_stall(client: ModelClient, messages: list[dict[str, Any]]) -> float:
    """The loop's longest stall (ms) while one request is sent and its reply read."""
    async with LoopStall() as stall:
        await client.complete(messages)
    return stall.worst * 1000


async def sdk_transform_ms(messages: list[dict[str, Any]]) -> float:
    from openai._utils._transform import async_maybe_transform
    from openai.types.chat import completion_create_params

    body = {"model": "m", "messages": messages, "stream": True}
    params = completion_create_params.CompletionCreateParamsStreaming
    began = time.perf_counter()
    await async_maybe_transform(body, params)
    return (time.perf_counter() - began) * 1000


async def main_async(sizes: list[int], runs: int) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "devtools.scripted_server", "--reply-words", "3"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        client = ModelClient(base_url=base_url, api_key="k", model="scripted-model")
        try:
            await client.complete(history(3))  # the SDK imported and its client built
            print(f"one streamed request, by history length; median of {runs} runs")
            for size in sizes:
                messages = history(size)
                stalls = []
                for _ in range(runs):
                    stalls.append(await longest_stall(client, messages))
                transform = statistics.median([await sdk_transform_ms(messages) for _ in range(3)])
                stall = statistics.median(stalls)
                verdict = "meets target" if stall <= STALL_TARGET_MS else "MISSES target"
                print(
                    f"   request with {size:,} messages: UI loop stall {stall:.1f} ms "
                    f"(runs {' '.join(f'{s:.0f}' for s in stalls)})   target <= "
                    f"{STALL_TARGET_MS:.0f} ms   {verdict}   (the SDK's typed transform of "
                    f"that history, no longer run: {transform:.0f} ms)"
                )
        finally:
            await client.aclose()
    finally:
        server.terminate()
        server.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    asyncio.run(main_async([int(s) for s in args.sizes.split(",") if s], args.runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
