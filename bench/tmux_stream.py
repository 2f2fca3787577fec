"""Benchmark: a long reply streamed into `trove` running in tmux, while a typist types.

    python bench/tmux_stream.py [--kind code|prose] [--tokens 10000] [--rates 2000,10000]
                                [--runs 4] [--keys-per-second 10]

The scripted server runs in its own process and streams one reply per request:
a fenced python code block (`code`) or one paragraph (`prose`) of --tokens
chunks, paced at the rate, then a last line holding a marker; it stamps the
moment it writes `[DONE]` (CLOCK_MONOTONIC, shared with this process). The app
runs in a detached tmux session of 100x32 (its own server socket), as a user
runs it; this process follows it through one tmux control-mode client (told
to send no pane output): keys go in as `send-keys`, and the screen is read
with `capture-pane` every `POLL` seconds, each a round trip of well under a
millisecond inside the tmux server.

Figures, per rate: the lag from `[DONE]` to the first screen showing the
marker (the whole reply drawn), the stream's duration against its nominal
one (tokens / rate: a slower stream means the app did not read as fast as the
server sent), and per key pressed while the reply streams (one every
1/--keys-per-second s), the time until the prompt on screen holds it. A figure
beside its target; a miss is printed as MISS. tmux's own latency is in every
figure; the machine's load average is printed, since other work skews them.
With TROVE_BENCH_SLOW_KEYS=1 in the environment, each run also names its three
slowest keys and when each was pressed (ms after the stream started).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

COLS, ROWS = 100, 32
TARGET_LAG_MS = 100.0
TARGET_ECHO_P95_MS = 33.0
TARGET_ECHO_MAX_MS = 50.0
MARKER = "END-OF-REPLY-7F3A"
TYPED = "abcdefghijklmnopqrstuvwxyz" * 8
SETTLE = 3.0
"""Seconds the app is left alone after its first screen, before the first key."""
IDLE_KEYS = 8
"""Keys typed as the prompt, one at a time, before the reply: the echo of an idle app."""
POLL = 0.002
"""Seconds between two reads of the screen."""
LIMIT = 120.0
"""Seconds a run may take before it is abandoned (a bound, not a delay)."""


# -- the reply -----------------------------------------------------------------------


def code_reply(tokens: int) -> list[str]:
    """A python code block of about `tokens` chunks (words, operators, spaces)."""
    lines: list[str] = []
    i = 0
    count = 0
    piece = re.compile(r"\s*[A-Za-z_0-9]+|\s*[^\sA-Za-z_0-9]|\s+")
    while count < tokens:
        k = i % 12
        line = [
            f"def function_{i}(alpha, beta={i}):",
            '    """Docstring for the function.',
            '    It spans two lines."""',
            f"    total = alpha + beta * {i % 97}  # a comment",
            f"    name = 'value {i}' if total > {i} else \"other\"",
            "    for index in range(total):",
            "        yield index ** 2, [index, {'key': index}]",
            "",
            f"class Thing{i}(Base):",
            "    def method(self) -> int:",
            f"        return self.value + {i}",
            "",
        ][k]
        lines.append(line)
        count += len(piece.findall(line))
        i += 1
    text = "Here it is:\n\n```python\n" + "\n".join(lines) + "\n```\n\n" + MARKER + "\n"
    return _pieces(text, piece)


def _pieces(text: str, piece: re.Pattern[str]) -> list[str]:
    out: list[str] = []
    at = 0
    for match in piece.finditer(text):
        if match.start() > at:
            out.append(text[at : match.start()])
        out.append(match.group())
        at = match.end()
    if at < len(text):
        out.append(text[at:])
    return out


def prose_reply(tokens: int) -> list[str]:
    """One paragraph of `tokens` words, then the marker."""
    vocab = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
    words = [vocab[i % len(vocab)] + " " for i in range(tokens)]
    return ["Here it is: ", *words, "\n\n", MARKER, "\n"]


# -- the server process ----------------------------------------------------------------


def serve_main(kind: str, tokens: int, rate: float) -> int:
    from devtools import scripted_server as s

    original_event = s._Handler._event

    def stamped(handler: Any, obj: dict[str, Any] | str) -> None:
        original_event(handler, obj)
        if obj == "[DONE]":
            print(f"done {time.monotonic():.6f}", flush=True)

    s._Handler._event = stamped  # type: ignore[method-assign]
    pieces = tuple(code_reply(tokens) if kind == "code" else prose_reply(tokens))

    def reply(body: dict[str, Any]) -> s.Reply:
        print(f"start {time.monotonic():.6f} {len(pieces)}", flush=True)
        return s.Reply(kind="text", pieces=pieces, per_second=rate)

    server = s.ScriptedServer(fallback=reply).start()
    print(server.base_url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        sys.stdin.read()
    server.stop()
    return 0


class Server:
    def __init__(self, kind: str, tokens: int, rate: float) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                kind,
                "--tokens",
                str(tokens),
                "--rate",
                str(rate),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        self.events: queue.Queue[tuple[str, float, int]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            parts = line.split()
            if parts and parts[0] in ("start", "done"):
                count = int(parts[2]) if len(parts) > 2 else 0
                self.events.put((parts[0], float(parts[1]), count))

    def close(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# -- tmux ---------------------------------------------------------------------------------


class Tmux:
    """`trove` in a detached tmux session, followed by one control-mode client."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.socket = f"trove-bench-{os.getpid()}-{time.monotonic_ns()}"
        args = ["new-session", "-d", "-x", str(COLS), "-y", str(ROWS), "-s", "trove"]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        self._run(*args, " ".join(_quote(a) for a in command))
        self._run("set-option", "-g", "window-size", "manual")
        self.client = subprocess.Popen(
            ["tmux", "-L", self.socket, "-f", "/dev/null", "-C", "attach", "-t", "trove"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        self._lock = threading.Lock()
        self._replies: queue.Queue[list[str]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.command("refresh-client -f no-output")

    def _run(self, *args: str) -> None:
        subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], check=True)

    def _read(self) -> None:
        assert self.client.stdout is not None
        block: list[str] | None = None
        for raw in self.client.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if block is not None:
                if line.startswith(("%end", "%error")):
                    self._replies.put(block)
                    block = None
                else:
                    block.append(line)
            elif line.startswith("%begin"):
                block = []

    def command(self, text: str) -> list[str]:
        assert self.client.stdin is not None
        with self._lock:
            self.client.stdin.write(text.encode() + b"\n")
            return self._replies.get(timeout=LIMIT)

    def screen(self) -> str:
        return "\n".join(self.command("capture-pane -p -t trove"))

    def send(self, keys: str, *, literal: bool = True) -> None:
        flag = "-l " if literal else ""
        self.command(f"send-keys -t trove {flag}{_quote(keys)}")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.kill()
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def prompt_text(screen: str) -> str:
    lines = screen.splitlines()
    tops = [i for i, line in enumerate(lines) if "▔▔▔" in line]
    bottoms = [i for i, line in enumerate(lines) if "▁▁▁" in line]
    if not tops or not bottoms:
        return ""
    inner = lines[tops[-1] + 1 : bottoms[-1]]
    return "".join(re.sub(r"^▊\s?|\s*▎$", "", line).strip() for line in inner)


# -- one run ------------------------------------------------------------------------------


def one_run(server: Server, config: Path, home: Path, keys_per_second: float) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TMUX", "TEXTUAL"))}
    env.update(TERM="xterm-256color", COLORTERM="truecolor")
    command = [sys.executable, "-m", "cli.main", "--home", str(home), "--config", str(config)]
    tmux = Tmux(command, env)
    try:
        deadline = time.monotonic() + LIMIT
        while "Welcome" not in (shown := tmux.screen()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"trove never started:\n{shown}")
            time.sleep(POLL)
        time.sleep(SETTLE)  # the client's import and the warm-up run in threads meanwhile
        idle = []
        for k in range(IDLE_KEYS):  # the prompt typed key by key: echo with nothing streaming
            pressed_at = time.monotonic()
            tmux.send(TYPED[k])
            while not prompt_text(tmux.screen()).startswith(TYPED[: k + 1]):
                if time.monotonic() > deadline:
                    raise RuntimeError("a key never showed")
                time.sleep(POLL)
            idle.append((time.monotonic() - pressed_at) * 1000)
            time.sleep(0.05)
        tmux.send("Enter", literal=False)
        kind, started, count = server.events.get(timeout=LIMIT)
        assert kind == "start"
        pressed: list[float] = []
        stop = threading.Event()

        def typist() -> None:
            gap = 1 / keys_per_second
            at = time.monotonic() + gap
            while not stop.is_set() and len(pressed) < len(TYPED):
                time.sleep(max(0.0, at - time.monotonic()))
                if stop.is_set():
                    return
                pressed.append(time.monotonic())
                tmux.send(TYPED[len(pressed) - 1])
                at += gap

        typing = threading.Thread(target=typist, daemon=True)
        typing.start()
        echoed: dict[int, float] = {}
        marker_at: float | None = None
        while marker_at is None and time.monotonic() < deadline:
            time.sleep(POLL)
            shown = tmux.screen()
            seen = time.monotonic()
            text = prompt_text(shown)
            typed = 0
            while typed < len(text) and typed < len(TYPED) and text[typed] == TYPED[typed]:
                typed += 1
            for k in range(typed):
                echoed.setdefault(k, seen)
            if MARKER in shown:
                marker_at = seen
        stop.set()
        typing.join()
        done = server.events.get(timeout=LIMIT)
        if marker_at is None:
            raise RuntimeError("the reply was never shown whole")
        echo = [(echoed[k] - t) * 1000 for k, t in enumerate(pressed) if k in echoed]
        return {
            "lag_ms": (marker_at - done[1]) * 1000,
            "stream_s": done[1] - started,
            "chunks": count,
            "echo_ms": echo,
            "keys": len(pressed),
            "idle_ms": idle,
            "slow": sorted(
                ((e, (t - started) * 1000) for e, t in zip(echo, pressed, strict=False)),
                reverse=True,
            )[:3],
            "stream_ms": (done[1] - started) * 1000,
        }
    finally:
        tmux.close()


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISS"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kind", choices=("code", "prose"), default="code")
    parser.add_argument("--tokens", type=int, default=10000)
    parser.add_argument("--rates", default="2000,10000")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--keys-per-second", type=float, default=10.0)
    parser.add_argument("--serve", choices=("code", "prose"), help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, default=2000.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve_main(args.serve, args.tokens, args.rate)
    if shutil.which("tmux") is None:
        print("tmux is not installed")
        return 1
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    for rate in (float(r) for r in args.rates.split(",")):
        server = Server(args.kind, args.tokens, rate)
        lags: list[float] = []
        echo: list[float] = []
        idle: list[float] = []
        slow: list[float] = []
        try:
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory(prefix="trove-tmux-") as tmp:
                    config = Path(tmp) / "config.yaml"
                    config.write_text(
                        "model:\n"
                        f"  base_url: {server.base_url}\n"
                        "  api_key: bench-key\n"
                        "  name: scripted-model\n"
                        "  context_window: 1000000\n"
                        "  max_retries: 0\n",
                        encoding="utf-8",
                    )
                    run = one_run(server, config, Path(tmp) / "home", args.keys_per_second)
                lags.append(run["lag_ms"])
                echo.extend(run["echo_ms"])
                idle.extend(run["idle_ms"])
                if os.environ.get("TROVE_BENCH_SLOW_KEYS"):
                    keys = ", ".join(f"{e:.0f} ms at +{t:.0f}" for e, t in run["slow"])
                    print(f"    slowest keys: {keys} (stream ended at +{run['stream_ms']:.0f})")
                slow.append(run["stream_s"] / (run["chunks"] / rate))
        finally:
            server.close()
        print(f"{args.kind}, {args.tokens} tokens at {rate:.0f} tok/s, {args.runs} runs:")
        worst = max(lags)
        lag_text = ", ".join(f"{lag:.0f}" for lag in lags)
        at = f"{args.tokens:,} {args.kind} tokens at {rate:,.0f} tok/s"
        print(
            f"  lag, {at}, [DONE] -> whole reply on screen: {lag_text} ms  "
            f"(target <= {TARGET_LAG_MS:.0f})  {_verdict(worst <= TARGET_LAG_MS)}"
        )
        print(
            "  stream duration / nominal: "
            + ", ".join(f"{s:.2f}x" for s in slow)
            + "  (1.00x: read as fast as sent)"
        )
        print(
            f"  key echo with nothing streaming (tmux and the poll included): median "
            f"{statistics.median(idle):.0f} ms, max {max(idle):.0f} ms"
        )
        if echo:
            ordered = sorted(echo)
            p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
            print(
                f"  key echo, {at}, over {len(echo)} keys: median "
                f"{statistics.median(echo):.0f} ms, "
                f"p95 {p95:.0f} ms (target <= {TARGET_ECHO_P95_MS:.0f}) "
                f"{_verdict(p95 <= TARGET_ECHO_P95_MS)}, max {max(echo):.0f} ms "
                f"(target <= {TARGET_ECHO_MAX_MS:.0f}) {_verdict(max(echo) <= TARGET_ECHO_MAX_MS)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
