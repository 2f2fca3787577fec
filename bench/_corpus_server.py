"""The scripted server in a process of its own, streaming the corpus and saying how it went.

    python bench/_corpus_server.py      # prints its base_url, then a JSON line per stream

A prompt `corpus NAME RATE` is answered with the corpus reply NAME (devtools.corpus), one
token a chunk at RATE tokens/s. After each stream it prints what the client made of it:
when the first and the last token were written (time.monotonic, which is CLOCK_MONOTONIC
and so shared with the benchmark's process), the rate it achieved, how long its writes
waited on a full socket, and how many bytes the client had not yet read when the
last token went out (its socket's receive queue, from /proc/net/tcp). It serves until its
stdin closes. `Server` runs it as a child of a benchmark.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from devtools import scripted_server as s  # noqa: E402
from devtools.corpus import reply, split  # noqa: E402


def unread_bytes(server_port: int, client_port: int) -> int:
    """Bytes sent on the connection that the client has not read: its socket's receive
    queue plus what ours still holds unacknowledged."""
    total = 0
    with contextlib.suppress(OSError), open("/proc/net/tcp", encoding="ascii") as table:
        next(table)
        for line in table:
            fields = line.split()
            local, remote, queues = fields[1], fields[2], fields[4]
            ports = (int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16))
            tx, rx = (int(q, 16) for q in queues.split(":"))
            if ports == (client_port, server_port):
                total += rx
            elif ports == (server_port, client_port):
                total += tx
    return total


HELD = 0.001
"""A write that took longer than this (s) waited on a full socket: the client was not reading."""


class Stats:
    """One stream's figures, gathered by the wrapped handler methods."""

    def __init__(self, name: str, rate: float, tokens: int) -> None:
        self.record: dict[str, Any] = {"name": name, "rate": rate, "tokens": tokens}
        self.sent = 0
        self.held = 0.0
        self.bytes = 0
        self.first = self.last = 0.0


def main() -> int:
    original_event = s._Handler._event
    original_write = s._Handler._write_chunk

    def write(handler: Any, payload: bytes) -> None:
        stats: Stats | None = getattr(handler, "bench_stats", None)
        if stats is not None:
            stats.bytes += len(payload)
        original_write(handler, payload)

    original_stream = s._Handler._stream

    def event(handler: Any, obj: dict[str, Any] | str) -> None:
        stats: Stats | None = getattr(handler, "bench_stats", None)
        content = (
            isinstance(obj, dict)
            and obj.get("choices")
            and obj["choices"][0]["delta"].get("content")
        )
        if stats is None or not content:
            original_event(handler, obj)
            return
        began = time.monotonic()
        original_event(handler, obj)
        stats.last = time.monotonic()
        took = stats.last - began
        if took > HELD:
            stats.held += took
        stats.sent += 1
        if stats.sent == 1:
            stats.first = stats.last
        if stats.sent == stats.record["tokens"]:
            server_port = handler.connection.getsockname()[1]
            client_port = handler.connection.getpeername()[1]
            stats.record["unread_bytes"] = unread_bytes(server_port, client_port)

    def stream(handler: Any, body: dict[str, Any], answer: s.Reply, gate: Any) -> None:
        words = s.message_text((body.get("messages") or [{}])[-1]).split()
        name = words[1] if len(words) == 3 else "?"
        handler.bench_stats = Stats(name, answer.per_second or 0.0, len(answer.pieces))
        try:
            original_stream(handler, body, answer, gate)
        finally:
            stats: Stats = handler.bench_stats
            handler.bench_stats = None
            span = stats.last - stats.first
            stats.record.update(
                first=stats.first,
                last=stats.last,
                sent=stats.sent,
                held_s=stats.held,
                bytes=stats.bytes,
                achieved=(stats.sent - 1) / span if span > 0 else float("inf"),
            )
            print(json.dumps(stats.record), flush=True)

    def answer(body: dict[str, Any]) -> s.Reply:
        text = s.message_text((body.get("messages") or [{}])[-1])
        words = text.split()
        if len(words) != 3 or words[0] != "corpus":
            return s.text("say `corpus NAME RATE`")
        pieces = tuple(split(reply(words[1])))
        return s.Reply(kind="text", pieces=pieces, per_second=float(words[2]))

    server = s.ScriptedServer(fallback=answer)
    s._Handler._event = event  # type: ignore[method-assign, assignment]
    s._Handler._stream = stream  # type: ignore[method-assign, assignment]
    s._Handler._write_chunk = write  # type: ignore[method-assign, assignment]
    server.start()
    print(server.base_url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        sys.stdin.read()
    server.stop()
    return 0


class Server:
    """bench/_corpus_server.py as a child; `streams` gets one record per finished stream."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            raise RuntimeError(f"the corpus server did not start: {self.base_url!r}")
        self.streams: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.streams.put(json.loads(line))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
