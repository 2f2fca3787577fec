"""Benchmark: the Textual app, against the TUI targets in DESIGN.md.

    python bench/tui.py [--runs 9] [--keys 200] [--stream-runs 3] [--typing-runs 3]
                        [--big-sizes 10000,100000] [--only launch,keys,stream,big]

Every figure comes from a fresh `trove` process started the way the `trove`
command starts it (`tui.cli.main`, so `run_tui` and `TroveApp.run()` with
the real Linux terminal driver) inside a pseudo-terminal of 100x32, with a
temporary --home and a --config pointing at a scripted OpenAI-compatible
server that runs in its own process (real sockets, real SSE, the real
`openai` client). The only thing added to the child is an autopilot (the
`auto_pilot` hook of `App.run`), injected by wrapping `App.run` before
`cli.main` is imported; it measures and reports through a pipe.

1. launch: wall time from spawning the interpreter to "ready": the end of
   the first frame drawn with the prompt focused and the thread open,
   against the same measurement of ../shared/baseline_app.py (the one
   baseline: Header, Markdown, Input, Footer); alternating
   runs after one warm-up each; median of N; the ratio is the target.
2. keys: with a held compaction summary in flight (/compact typed into the
   app; the server holds the summary before sending a byte), key events go
   in through the driver exactly as terminal input does (what `Pilot.press`
   does, without its 20 ms idle waits); per key, the time until the prompt's
   text holds it and until the frame after that has been drawn.
3. stream: 4,000 one-word chunks at each of --rates (2,000 and 10,000
   chunks/s); the server process stamps the moment it writes `[DONE]`
   (right after the last token), the app the moment the frame showing the
   whole reply is drawn; the lag is the difference (CLOCK_MONOTONIC is
   shared by both processes). --typing-runs more runs per rate have a typist
   thread press a key every 20 ms from the moment the prompt is sent until
   the reply has streamed, without waiting for any echo (as a terminal's
   input thread would): per key, the time from its press until the prompt
   holds it and until the frame after that, pooled over those runs (the
   keys pressed as a turn starts are the slowest; each run has its share).
4. big: threads of each of --big-sizes messages (10,000 and 100,000) written
   with SessionLog appends, each resumed with --thread: spawn -> ready (as
   in launch) and RSS, alternating with launches of the baseline in the
   same run after one warm-up round, median of --big-runs; the ratio to the
   baseline's launch is the target (<= 1.15 x at 10k and at 100k, RSS <= 80 MB
   at 100k). Then, in the first size only: Home to the top, "load earlier"
   until every message is mounted (or --load-budget runs out), RSS again,
   End back.

Set TROVE_BENCH_TRACE_STALLS=MS to also print the loop thread's stacks
sampled while the event loop was stalled for more than MS (keys, stream).
Set TROVE_BENCH_PROFILE=PATH to run each Trove child under cProfile and dump
its stats to PATH.<scenario>.<pid> (the figures are then slower than real).
The machine's load average is printed: other work on it skews the figures.

Figures are printed, never asserted: this is a benchmark, not a test.
"""

from __future__ import annotations

import time

CHILD_T0 = time.perf_counter()  # the first thing a child does: its own start

import argparse  # noqa: E402
import contextlib  # noqa: E402
import fcntl  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pty  # noqa: E402
import select  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import termios  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Awaitable, Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

if TYPE_CHECKING:
    from textual.app import App
    from textual.pilot import Pilot

ROOT = Path(__file__).resolve().parent.parent
# This file is named like the `tui` package: keep bench/ off the path so
# `import tui` always finds the package, and put the repository first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

COLS, ROWS = 100, 32
REPORT_FD_ENV = "TROVE_BENCH_REPORT_FD"
STREAM_WORDS = 4000
STREAM_RATES = (2000.0, 10000.0)
TARGET_STREAM_LAG_MS_BY_RATE = {2000.0: 100.0, 10000.0: 100.0}
TYPIST_EVERY = 0.02
USER_ID = "local"

TARGET_LAUNCH_RATIO = 1.1
TARGET_KEY_P95_MS = 33.0
TARGET_KEY_MAX_MS = 50.0
TARGET_RSS_MB = 200.0
TARGET_RESUME = {10000: (1.15, None), 100000: (1.15, 80.0)}
"""Resume of a thread of N messages: (ratio to the baseline's launch, RSS MB at ready)."""

BASELINE_APP = ROOT.parent / "shared" / "baseline_app.py"
"""The one baseline of every launch ratio (DESIGN.md): Header, Markdown, Input, Footer."""
BASELINE_COPY = """\
from textual.app import App
from textual.widgets import Footer, Header, Input, Markdown
class Baseline(App):
    BINDINGS = [("ctrl+q", "quit", "Quit")]
    def compose(self):
        yield Header()
        yield Markdown("# Baseline\\n\\nA *minimal* Textual chat screen.")
        yield Input(placeholder="Type a message")
        yield Footer()
Baseline().run()
"""
"""Used only where ../shared is absent (a lone clone); the same ten lines."""


def baseline_source() -> tuple[str, str]:
    """The baseline's code and where it came from."""
    if BASELINE_APP.exists():
        return BASELINE_APP.read_text(), str(BASELINE_APP)
    return BASELINE_COPY, "a copy of ../shared/baseline_app.py (not found)"


# =============================================================================
# child side: runs inside the pty, reports JSON lines on REPORT_FD_ENV
# =============================================================================


def _report(record: dict[str, Any]) -> None:
    fd = int(os.environ[REPORT_FD_ENV])
    os.write(fd, (json.dumps(record) + "\n").encode())


def _rss_mb() -> dict[str, float]:
    """VmRSS and VmHWM (peak) of this process, in MB, from /proc/self/status."""
    out: dict[str, float] = {}
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    return out


async def _until(
    predicate: Callable[[], bool], timeout: float = 30.0, step: float = 0.0005
) -> None:
    """Poll `predicate` on the app's loop; the poll interval bounds the error (0.5 ms)."""
    import asyncio

    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"waited {timeout}s for {predicate.__name__}")
        await asyncio.sleep(step)


def _send_key(app: App[Any], key: str, char: str | None) -> None:
    """Deliver a key exactly as terminal input arrives: through the driver."""
    from textual import events

    event = events.Key(key, char)
    event.set_sender(app)
    assert app._driver is not None
    app._driver.send_message(event)


async def _type(app: App[Any], text: str) -> None:
    """Type and send a prompt, one key event per character, then Enter."""
    from tui.widgets.prompt_input import PromptInput

    prompt = app.query_one(PromptInput)
    for ch in text:
        before = len(prompt.text)
        _send_key(app, "space" if ch == " " else ch, ch)
        await _until(lambda before=before: len(prompt.text) > before, 5)
    _send_key(app, "enter", "\r")
    # Wait until the app has taken the prompt: keys that arrive before it
    # handles the submission are wiped by its prompt.clear() (see the report).
    await _until(lambda: prompt.text == "", 5)


LETTERS = "abcdefghijklmnopqrstuvwxyz"


async def _echo(app: App[Any], prompt: Any, ch: str) -> tuple[float, float]:
    """One key: ms until the prompt's text holds it, and until the next frame is drawn."""
    before = len(prompt.text)
    t0 = time.perf_counter()
    _send_key(app, ch, ch)
    await _until(lambda: len(prompt.text) > before, 5)
    t1 = time.perf_counter()
    await app.screen.wait_for_refresh()
    t2 = time.perf_counter()
    return (t1 - t0) * 1000, (t2 - t0) * 1000


def _is_ready(app: App[Any], trove: bool) -> bool:
    from textual.widgets import Input, TextArea

    if not isinstance(app.focused, Input | TextArea):
        return False
    return not trove or getattr(app, "runtime", None) is not None


class _ReadyFrame:
    """When the first frame that shows a ready prompt was written to the terminal.

    Ready is what the user sees: a frame drawn while the prompt had the focus
    (and, for Trove, the thread was open and shown). A layout or a run of the
    screen's frame timer paints what the widgets hold as it begins; the first
    that began ready and wrote to the terminal is that frame, and its end is
    the figure. Polling from the autopilot instead, then
    waiting for "the next refresh", measured the autopilot's first turn on a
    busy loop and one more frame after it, neither of which the user sees.
    """

    trove = False
    at: float | None = None
    displays = 0

    @classmethod
    def watch_screen(cls, module: Any) -> None:
        """Wrap textual.screen's two ways to a frame (before any screen exists): a layout
        (a screen's first frames come from its resume and resize) and the frame timer."""
        for name in ("_refresh_layout", "_on_timer_update"):
            setattr(module.Screen, name, cls._drawing(getattr(module.Screen, name)))

    @classmethod
    def _drawing(cls, method: Callable[..., Any]) -> Callable[..., Any]:
        def drawing(self: Any, *args: Any, **kwargs: Any) -> Any:
            ready = cls.at is None and _is_ready(self.app, cls.trove)
            before = cls.displays
            result = method(self, *args, **kwargs)
            if ready and cls.at is None and cls.displays > before:
                cls.at = time.perf_counter()
            return result

        return drawing

    @classmethod
    def watch_app(cls, module: Any) -> None:
        """Count the frames textual.app writes."""
        display = module.App._display

        def _display(self: Any, *args: Any, **kwargs: Any) -> Any:
            cls.displays += 1
            return display(self, *args, **kwargs)

        module.App._display = _display


async def _wait_ready(app: App[Any], trove: bool) -> float:
    """The end of the first frame drawn with the prompt focused (and, for Trove, the
    thread open): see `_ReadyFrame`."""
    await _until(lambda: _ReadyFrame.at is not None, 60)
    assert _ReadyFrame.at is not None
    return _ReadyFrame.at


class _DrawWork:
    """Counts the screen's layouts and repaints and the reply's frames, with their CPU time.

    Wall-clock figures swing with the machine's load; the number of layouts
    per reply and the UI thread's CPU time (`thread_time`: other processes do
    not add to it) compare before/after on a shared machine. Counting wraps
    the methods on the classes, in the child only, for the scenario's life.
    """

    WRAPPED = (
        ("textual.screen", "Screen", "_refresh_layout", "layouts"),
        ("textual.screen", "Screen", "_compositor_refresh", "repaints"),
        ("tui.widgets.assistant_message", "AssistantMessage", "_show_pending", "frames"),
    )

    def __init__(self) -> None:
        import importlib

        self.counts: dict[str, list[float]] = {}
        for module, cls_name, method, label in self.WRAPPED:
            cls = getattr(importlib.import_module(module), cls_name)
            setattr(cls, method, self._wrap(getattr(cls, method), label))
        self._cpu0 = time.thread_time()

    def _wrap(self, original: Callable[..., Any], label: str) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                entry = self.counts.setdefault(label, [0, 0.0])
                entry[0] += 1
                entry[1] += time.thread_time() - started

        return counted

    def reset(self) -> None:
        self.counts.clear()
        self._cpu0 = time.thread_time()

    def snapshot(self) -> dict[str, Any]:
        """Per label: [calls, CPU ms] (a layout's CPU includes the repaint it makes)."""
        work = {k: [int(n), cpu * 1000] for k, (n, cpu) in self.counts.items()}
        return {"loop_cpu_ms": (time.thread_time() - self._cpu0) * 1000, "work": work}


class _LoopWatch:
    """Largest event-loop stall seen by a 5 ms heartbeat while active.

    With `TROVE_BENCH_TRACE_STALLS=MS` set, a sampler thread also records the
    loop thread's stack whenever the heartbeat is more than MS late, so a
    stall can be traced to the code that caused it (reported as `stacks`).
    """

    def __init__(self) -> None:
        self.worst = 0.0
        self.stalls: list[tuple[float, float]] = []
        """(start, length) of every stall over 20 ms."""
        self.stacks: dict[str, int] = {}
        self._task: Any = None
        self._beat = time.perf_counter()
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None

    def start(self) -> None:
        import asyncio

        async def beat() -> None:
            while True:
                before = time.perf_counter()
                self._beat = before
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                late = now - before - 0.005
                self.worst = max(self.worst, late)
                if late > 0.02:
                    self.stalls.append((before, late))

        self._beat = time.perf_counter()
        self._task = asyncio.ensure_future(beat())
        threshold = float(os.environ.get("TROVE_BENCH_TRACE_STALLS", "0")) / 1000
        if threshold > 0:
            loop_thread = threading.get_ident()
            self._sampler = threading.Thread(
                target=self._sample, args=(loop_thread, threshold), daemon=True
            )
            self._sampler.start()

    def _sample(self, loop_thread: int, threshold: float) -> None:
        import traceback as tb

        while not self._stop.wait(0.003):
            if time.perf_counter() - self._beat < threshold:
                continue
            frame = sys._current_frames().get(loop_thread)
            if frame is None:
                continue
            frames = tb.extract_stack(frame)[-14:]
            key = " <- ".join(
                f"{Path(f.filename).name}:{f.lineno}:{f.name}" for f in reversed(frames)
            )
            self.stacks[key] = self.stacks.get(key, 0) + 1

    def stop(self) -> float:
        if self._task is not None:
            self._task.cancel()
        self._stop.set()
        return self.worst * 1000

    def top_stacks(self, n: int = 6) -> list[tuple[int, str]]:
        return sorted(((c, k) for k, c in self.stacks.items()), reverse=True)[:n]


async def _scenario_launch(pilot: Pilot[Any], trove: bool, args: argparse.Namespace) -> None:
    app = pilot.app
    ready = await _wait_ready(app, trove)
    _report({"ready": ready, "child_t0": CHILD_T0, **_rss_mb()})
    app.exit()


async def _scenario_resume(pilot: Pilot[Any], trove: bool, args: argparse.Namespace) -> None:
    import asyncio

    app = pilot.app
    ready = await _wait_ready(app, trove)
    await asyncio.sleep(0.3)  # let post-ready work (deferred restores, warm-ups) settle
    _report({"ready": ready, "child_t0": CHILD_T0, "rss": _rss_mb()})
    await app.run_action("quit")  # as a user quits: what it keeps for the next open is kept


async def _scenario_keys(pilot: Pilot[Any], trove: bool, args: argparse.Namespace) -> None:
    import asyncio

    from engine import events as ev
    from tui.widgets.prompt_input import PromptInput

    app: Any = pilot.app
    await _wait_ready(app, trove)
    log = app.runtime.thread.log

    def replies() -> int:
        return sum(1 for e in log.events if isinstance(e, ev.TurnEnd))

    for question in ("first question", "second question"):
        done = replies()
        await _type(app, question)
        await _until(lambda done=done: replies() > done, 20)
    await app.runtime.driver.when_idle()
    await _type(app, "/compact")
    await _until(lambda: log.tail.open_compact is not None, 10)
    await asyncio.sleep(0.3)  # the summary request is on the wire and held
    prompt = app.query_one(PromptInput)
    watch = _LoopWatch()
    watch.start()
    text_ms: list[float] = []
    frame_ms: list[float] = []
    for i in range(args.keys):
        in_text, on_screen = await _echo(app, prompt, LETTERS[i % len(LETTERS)])
        text_ms.append(in_text)
        frame_ms.append(on_screen)
        await asyncio.sleep(0.01 + (i % 3) * 0.005)  # a fast typist, not a flood
    stall = watch.stop()
    _report(
        {
            "text_ms": text_ms,
            "frame_ms": frame_ms,
            "stall_ms": stall,
            "stacks": watch.top_stacks(),
            "still_compacting": log.tail.open_compact is not None,
            "typed_ok": prompt.text.endswith(LETTERS[(args.keys - 1) % len(LETTERS)]),
        }
    )
    app.exit()


class _Typist:
    """Presses a key every TYPIST_EVERY seconds from its own thread, never waiting for echoes.

    A press is handed to the app's loop the way a terminal's input thread
    hands it over (`call_soon_threadsafe`), so a stalled loop delays the
    echo, not the next press. A watcher on the loop stamps when the prompt
    first holds each key and when the frame after that is drawn.
    """

    def __init__(self, app: Any, prompt: Any) -> None:
        import asyncio

        self.app = app
        self.prompt = prompt
        self.loop = asyncio.get_running_loop()
        self.base = len(prompt.text)
        self.pressed: list[float] = []
        self.echoed: dict[int, float] = {}
        self.framed: dict[int, float] = {}
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._press, daemon=True)
        self._watcher: Any = None
        self._frames: list[Any] = []

    def start(self) -> None:
        import asyncio

        self._thread.start()
        self._watcher = asyncio.ensure_future(self._watch())

    def _press(self) -> None:
        due = time.perf_counter()
        i = 0
        while not self._halt.is_set():
            ch = LETTERS[i % len(LETTERS)]
            self.pressed.append(time.perf_counter())
            self.loop.call_soon_threadsafe(_send_key, self.app, ch, ch)
            i += 1
            due += TYPIST_EVERY
            self._halt.wait(max(0.0, due - time.perf_counter()))

    async def _frame(self, keys: range) -> None:
        await self.app.screen.wait_for_refresh()
        now = time.perf_counter()
        for k in keys:
            self.framed[k] = now

    async def _watch(self) -> None:
        import asyncio

        seen = 0
        while not (self._halt.is_set() and seen >= len(self.pressed)):
            held = min(len(self.prompt.text) - self.base, len(self.pressed))
            if held > seen:
                now = time.perf_counter()
                keys = range(seen, held)
                for k in keys:
                    self.echoed[k] = now
                self._frames.append(asyncio.ensure_future(self._frame(keys)))
                seen = held
            await asyncio.sleep(0.0005)

    async def finish(self) -> tuple[list[float], list[float]]:
        """Stop pressing; per key, ms to echo and ms to the frame after it."""
        import asyncio

        self._halt.set()
        await asyncio.to_thread(self._thread.join)
        await asyncio.wait_for(self._watcher, 10)
        await asyncio.gather(*self._frames)
        echo = [(self.echoed[k] - t) * 1000 for k, t in enumerate(self.pressed)]
        frame = [(self.framed[k] - t) * 1000 for k, t in enumerate(self.pressed)]
        return echo, frame


async def _scenario_stream(pilot: Pilot[Any], trove: bool, args: argparse.Namespace) -> None:
    import asyncio

    from devtools.scripted_server import words
    from tui.widgets.assistant_message import AssistantMessage
    from tui.widgets.prompt_input import PromptInput
    from tui.widgets.transcript import Transcript

    app: Any = pilot.app
    await _wait_ready(app, trove)
    transcript = app.query_one(Transcript)
    prompt = app.query_one(PromptInput)
    expected = words(STREAM_WORDS).content
    draws = _DrawWork()
    for run in range(args.stream_runs + args.typing_runs):
        typing = run >= args.stream_runs  # the last runs also type while they stream
        replies = len(transcript.query(AssistantMessage))
        watch = _LoopWatch()
        await _type(app, f"stream {run}")
        sent = time.perf_counter()
        draws.reset()
        watch.start()
        stop = asyncio.Event()
        typist = _Typist(app, prompt) if typing else None
        if typist is not None:
            typist.start()

        def started(replies: int = replies) -> bool:
            return len(transcript.query(AssistantMessage)) > replies

        await _until(started, 10)
        first = time.perf_counter()
        message = transcript.query(AssistantMessage).last()

        def whole_reply_shown(message: Any = message) -> bool:
            return bool(message.drawn == expected)

        await _until(whole_reply_shown, 60)
        await message.wait_for_refresh()
        frame = time.perf_counter()
        drawn = draws.snapshot()
        stall = watch.stop()
        stop.set()
        keys_ms: list[float] = []
        echo_ms: list[float] = []
        pressed_ms: list[float] = []
        if typist is not None:
            echo_ms, keys_ms = await typist.finish()
            pressed_ms = [(t - sent) * 1000 for t in typist.pressed]
        await app.runtime.driver.when_idle()
        prompt.clear()
        _report(
            {
                "run": run,
                "typing": typing,
                "keys_ms": keys_ms,
                "pressed_ms": pressed_ms,
                "echo_ms": echo_ms,
                "sent": sent,
                "first_widget": first,
                "frame": frame,
                "stall_ms": stall,
                "stacks": watch.top_stacks(),
                "stalls": watch.stalls,
                **drawn,
            }
        )
    app.exit()


async def _scenario_big(pilot: Pilot[Any], trove: bool, args: argparse.Namespace) -> None:
    import asyncio

    from textual.widget import Widget

    from tui.widgets.chat_message import PastReply, UserMessage
    from tui.widgets.transcript import Transcript

    app: Any = pilot.app
    ready = await _wait_ready(app, trove)
    await asyncio.sleep(0.5)  # let any post-ready work settle before sampling memory
    transcript = app.query_one(Transcript)

    def mounted_messages() -> int:
        return len(transcript.query(UserMessage)) + len(transcript.query(PastReply))

    out: dict[str, Any] = {
        "ready": ready,
        "rss_ready": _rss_mb(),
        "mounted_ready": mounted_messages(),
    }

    async def key_until(key: str, predicate: Callable[[], bool]) -> tuple[float, float]:
        """ms to the first frame that moved, and to the frame that arrived.

        Home and End animate (Textual's scroll_home/scroll_end default to 1 s),
        so arrival includes that animation; the first move is the response.
        """
        start_y = transcript.scroll_y
        t0 = time.perf_counter()
        _send_key(app, key, None)
        await _until(lambda: transcript.scroll_y != start_y or predicate(), 30)
        await app.screen.wait_for_refresh()
        moved = time.perf_counter()
        await _until(predicate, 30)
        await app.screen.wait_for_refresh()
        return (moved - t0) * 1000, (time.perf_counter() - t0) * 1000

    def at_top() -> bool:
        return transcript.scroll_y == 0

    def at_bottom() -> bool:
        return transcript.scroll_y >= transcript.max_scroll_y - 1

    transcript.focus()
    await app.screen.wait_for_refresh()
    out["home_ms"] = await key_until("home", at_top)

    steps: list[float] = []
    budget = time.perf_counter() + args.load_budget
    while time.perf_counter() < budget:
        found = transcript.query("#load-earlier")
        if not found:
            break
        button = found.first()
        before = set(transcript.children)
        start = transcript._start
        t0 = time.perf_counter()
        button.press()
        await _until(lambda start=start: transcript._start != start, 30)
        fresh: list[Widget] = [w for w in transcript.children if w not in before]
        await asyncio.gather(*(w.wait_for_refresh() for w in fresh))
        await app.screen.wait_for_refresh()
        steps.append((time.perf_counter() - t0) * 1000)
    out["load_steps_ms"] = steps
    out["all_loaded"] = not transcript.query("#load-earlier")
    out["mounted_all"] = mounted_messages()
    out["dom_nodes"] = sum(1 for _ in app.screen.walk_children(with_self=False))
    await asyncio.sleep(0.5)
    out["rss_all"] = _rss_mb()
    out["end_ms"] = await key_until("end", at_bottom)
    # The window holds at most its high-water mark of messages, so Home only reaches the
    # top of what is mounted (and more loads above it); the thread's start is Ctrl+Home,
    # from the prompt, as a user reaches it.
    from tui.widgets.prompt_input import PromptInput

    app.query_one(PromptInput).focus()
    await app.screen.wait_for_refresh()
    out["home_all_ms"] = await key_until("ctrl+home", lambda: at_top() and transcript._start == 0)
    out["end_all_ms"] = await key_until("ctrl+end", at_bottom)
    _report(out)
    app.exit()


SCENARIOS: dict[str, Callable[[Any, bool, argparse.Namespace], Awaitable[None]]] = {
    "launch": _scenario_launch,
    "keys": _scenario_keys,
    "stream": _scenario_stream,
    "big": _scenario_big,
    "resume": _scenario_resume,
}


def _when_imported(name: str, patch: Callable[[Any], None]) -> None:
    """Run `patch` on module `name` as soon as it is first imported.

    The child must not import Textual itself to hook the app's `run`: a user's
    `trove` imports it when its own start-up gets there, and work Trove starts
    before that (the early open of `--thread`) would otherwise be measured
    starting after a Textual import it never waits for.
    """
    import importlib.abc
    import importlib.util

    if name in sys.modules:
        patch(sys.modules[name])
        return

    class Hook(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname != name:
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(fullname)
            loader: Any = spec.loader if spec is not None else None
            if loader is None:
                return spec
            exec_module = loader.exec_module

            def run(module: Any) -> None:
                exec_module(module)
                patch(module)

            loader.exec_module = run
            return spec

    sys.meta_path.insert(0, Hook())


def child_main(args: argparse.Namespace, rest: Sequence[str]) -> int:
    """Run Trove (via cli.main) or the bare app with an autopilot that measures."""
    try:
        trove = args.child_app == "trove"
        scenario = SCENARIOS[args.child]

        async def autopilot(pilot: Pilot[Any]) -> None:
            try:
                await scenario(pilot, trove, args)
            except BaseException:
                _report({"error": traceback.format_exc()})
                pilot.app.exit()
                raise

        def hook_run(module: Any) -> None:
            original = module.App.run

            def run(self: Any, **kw: Any) -> Any:
                kw.setdefault("auto_pilot", autopilot)
                return original(self, **kw)

            module.App.run = run
            _ReadyFrame.watch_app(module)

        _ReadyFrame.trove = trove
        _when_imported("textual.screen", _ReadyFrame.watch_screen)
        _when_imported("textual.app", hook_run)
        if trove:
            from cli.main import main

            profile_to = os.environ.get("TROVE_BENCH_PROFILE")
            if not profile_to:
                return main(list(rest))
            import cProfile

            with cProfile.Profile() as profile:
                try:
                    return main(list(rest))
                finally:
                    profile.dump_stats(f"{profile_to}.{args.child}.{os.getpid()}")
        code, _ = baseline_source()
        exec(compile(code, "baseline_app.py", "exec"), {"__name__": "__main__"})
        return 0
    except BaseException:
        _report({"error": traceback.format_exc()})
        return 1


# =============================================================================
# scripted server process
# =============================================================================


def serve_main(mode: str, rate: float) -> int:
    """The scripted server in its own process; prints base_url, then `done <t>` per stream.

    `keys`: two short replies, then a summary held (before any byte) until the
    client goes away. `stream`: every request gets 4,000 paced one-word chunks.
    """
    from devtools import scripted_server as s

    original_event = s._Handler._event

    def stamped(handler: Any, obj: dict[str, Any] | str) -> None:
        original_event(handler, obj)
        if obj == "[DONE]":
            print(f"done {time.perf_counter():.6f}", flush=True)

    s._Handler._event = stamped  # type: ignore[method-assign]
    if mode == "stream":
        server = s.ScriptedServer(fallback=lambda body: s.words(STREAM_WORDS, per_second=rate))
    else:
        server = s.ScriptedServer()
        server.script(
            s.text("first answer"), s.text("second answer"), s.text("summary", hold="before")
        )
    server.start()
    print(server.base_url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        sys.stdin.read()  # until the parent closes our stdin
    server.stop()
    return 0


class Server:
    """A scripted server child; `done` collects the times it wrote `[DONE]`."""

    def __init__(self, mode: str, rate: float = STREAM_RATES[0]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", mode, "--rate", str(rate)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            raise RuntimeError(f"scripted server did not start: {self.base_url!r}")
        self.done: list[float] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("done "):
                self.done.append(float(line.split()[1]))

    def close(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# =============================================================================
# parent side
# =============================================================================


def run_child(
    scenario: str, app: str, trove_args: Sequence[str], opts: Sequence[str], timeout: float
) -> tuple[float, list[dict[str, Any]]]:
    """Spawn a child in a fresh pty; returns its spawn time and its report lines."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    rfd, wfd = os.pipe()
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
        REPORT_FD_ENV: str(wfd),
    }
    env.pop("TEXTUAL", None)
    # Python's default, as on a user's machine: the first run caches each module's
    # bytecode and later runs load it. With the variable set (this sandbox sets it)
    # every launch compiled Trove's ~70 source modules again, about 100 ms the
    # baseline (only site-packages, compiled at install) never paid.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        scenario,
        "--child-app",
        app,
        *opts,
        "--",
        *trove_args,
    ]
    screen = bytearray()

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            screen.extend(data)
            del screen[:-20000]

    spawned = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        pass_fds=(wfd,),
        start_new_session=True,
        cwd=ROOT,
    )
    os.close(slave)
    os.close(wfd)
    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    raw = bytearray()
    deadline = time.monotonic() + timeout
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([rfd], [], [], left)
        if not ready:
            continue
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        raw.extend(chunk)
    os.close(rfd)
    try:
        proc.wait(timeout=0 if timed_out else 15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    drainer.join(timeout=2)
    os.close(master)
    records = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
    errors = [r["error"] for r in records if "error" in r]
    if errors or timed_out or not records:
        tail = screen.decode(errors="replace")[-1500:]
        why = errors[0] if errors else ("timed out" if timed_out else "no report")
        raise RuntimeError(f"{scenario}/{app} child failed: {why}\n--- terminal tail ---\n{tail}")
    return spawned, records


def write_config(directory: Path, base_url: str) -> Path:
    path = directory / "config.yaml"
    path.write_text(
        "model:\n"
        f"  base_url: {base_url}\n"
        "  api_key: bench-key\n"
        "  name: scripted-model\n"
        "  context_window: 128000\n"
        "  max_retries: 0\n"
        "compaction:\n"
        "  keep_recent_tokens: 0\n",
        encoding="utf-8",
    )
    return path


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _print_stacks(rec: dict[str, Any]) -> None:
    """Stacks sampled during stalls (only with TROVE_BENCH_TRACE_STALLS set)."""
    for count, stack in rec.get("stacks") or ():
        print(f"      stalled x{count}: {stack}")


def _verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"


def bench_launch(work: Path, base_url: str, runs: int) -> None:
    home = work / "launch-home"
    config = write_config(work, base_url)
    trove_args = ["--home", str(home), "--config", str(config)]
    walls: dict[str, list[float]] = {"bare": [], "trove": []}
    inner: dict[str, list[float]] = {"bare": [], "trove": []}
    rss: dict[str, float] = {}
    for i in range(runs + 1):  # the first pair warms the page cache and .pyc files
        for app in ("bare", "trove"):
            spawned, records = run_child("launch", app, trove_args, [], 60)
            rec = records[0]
            if i:
                walls[app].append((rec["ready"] - spawned) * 1000)
                inner[app].append((rec["ready"] - rec["child_t0"]) * 1000)
                rss[app] = rec.get("VmRSS", float("nan"))
    bare, trove = statistics.median(walls["bare"]), statistics.median(walls["trove"])
    ratio = trove / bare
    print(
        "1. launch to a ready prompt (spawn -> the end of the first frame drawn with the "
        f"prompt focused and the thread open), "
        f"median of {runs}; baseline: {baseline_source()[1]}"
    )
    for app in ("bare", "trove"):
        runs_txt = " ".join(f"{v:.0f}" for v in walls[app])
        print(
            f"   {app:5}: {statistics.median(walls[app]):7.1f} ms   "
            f"(in-process {statistics.median(inner[app]):.0f} ms; runs {runs_txt}; "
            f"RSS {rss[app]:.0f} MB)"
        )
    in_ratio = statistics.median(inner["trove"]) / statistics.median(inner["bare"])
    print(
        f"   ratio: {ratio:.2f} x   target <= {TARGET_LAUNCH_RATIO} x   "
        f"{_verdict(ratio <= TARGET_LAUNCH_RATIO)}   "
        f"(excluding interpreter start: {in_ratio:.2f} x)"
    )


def bench_keys(work: Path, keys: int) -> None:
    (work / "keys").mkdir()
    with Server("keys") as server:
        config = write_config(work / "keys", server.base_url)
        trove_args = ["--home", str(work / "keys" / "home"), "--config", str(config)]
        _, records = run_child("keys", "trove", trove_args, ["--keys", str(keys)], 90)
    rec = records[0]
    text, frame = rec["text_ms"], rec["frame_ms"]
    p95 = _pct(frame, 0.95)
    print(f"2. keystroke to echo while a compaction summary is in flight ({len(frame)} keys)")
    print(
        f"   in the prompt's text: p50 {_pct(text, 0.5):5.1f} ms   p95 {_pct(text, 0.95):5.1f} ms"
        f"   max {max(text):5.1f} ms"
    )
    print(
        f"   on screen (frame):    p50 {_pct(frame, 0.5):5.1f} ms   p95 {p95:5.1f} ms"
        f"   max {max(frame):5.1f} ms   target p95 <= {TARGET_KEY_P95_MS:.0f} ms   "
        f"{_verdict(p95 <= TARGET_KEY_P95_MS)}"
    )
    print(
        f"   summary still in flight at the end: {rec['still_compacting']}; "
        f"every key landed: {rec['typed_ok']}; worst event-loop stall {rec['stall_ms']:.1f} ms"
    )
    _print_stacks(rec)


def bench_stream(work: Path, runs: int, rate: float, typing_runs: int) -> None:
    where = work / f"stream-{rate:.0f}"
    where.mkdir()
    target = TARGET_STREAM_LAG_MS_BY_RATE.get(rate, TARGET_STREAM_LAG_MS_BY_RATE[STREAM_RATES[0]])
    with Server("stream", rate) as server:
        config = write_config(where, server.base_url)
        trove_args = ["--home", str(where / "home"), "--config", str(config)]
        _, records = run_child(
            "stream",
            "trove",
            trove_args,
            ["--stream-runs", str(runs), "--typing-runs", str(typing_runs)],
            40 + 15 * (runs + typing_runs),
        )
        time.sleep(0.2)
        done = list(server.done)
    print(
        f"3. streaming {STREAM_WORDS} tokens at {rate:.0f} tokens/s "
        f"(server's last token -> frame showing the whole reply)"
    )
    lags: list[float] = []
    keys_ms: list[float] = []
    echo_ms: list[float] = []
    slowest: list[tuple[float, float]] = []
    for rec, last_token in zip(records, done, strict=False):
        lag = (rec["frame"] - last_token) * 1000
        long_stalls = [length * 1000 for _, length in rec["stalls"] if length > 0.05]
        if not rec["typing"]:
            label = f"run {rec['run'] + 1}"
        else:
            label = f"typing {rec['run'] + 1 - runs}" if typing_runs > 1 else "typing"
        print(
            f"   {label:6}: lag {lag:6.1f} ms   (prompt -> last token "
            f"{last_token - rec['sent']:.2f} s; -> reply widget "
            f"{(rec['first_widget'] - rec['sent']) * 1000:.0f} ms; "
            f"{len(long_stalls)} event-loop stalls > 50 ms, longest {rec['stall_ms']:.0f} ms)"
        )
        work = rec.get("work", {})
        print(
            "           UI thread CPU from prompt to whole reply "
            f"{rec.get('loop_cpu_ms', 0):.0f} ms; "
            + ", ".join(
                f"{n} {label} ({cpu:.0f} ms CPU)" for label, (n, cpu) in sorted(work.items())
            )
        )
        if rec["typing"]:
            keys_ms.extend(rec["keys_ms"])
            echo_ms.extend(rec["echo_ms"])
            slowest.extend(zip(rec["keys_ms"], rec["pressed_ms"], strict=True))
        else:
            lags.append(lag)
        _print_stacks(rec)
    if len(done) != len(records):
        print(f"   warning: {len(done)} [DONE] stamps for {len(records)} runs")
    if keys_ms:
        p95 = _pct(keys_ms, 0.95)
        print(
            f"   keystroke to frame while streaming ({len(keys_ms)} keys in {typing_runs} "
            f"repl{'y' if typing_runs == 1 else 'ies'}, one per {TYPIST_EVERY * 1000:.0f} ms, "
            "not waiting): "
            f"p50 {_pct(keys_ms, 0.5):.1f} ms, p95 {p95:.1f} ms, max {max(keys_ms):.1f} ms "
            f"(to the prompt holding it: p95 {_pct(echo_ms, 0.95):.1f} ms)   "
            f"target p95 <= {TARGET_KEY_P95_MS:.0f} ms, max <= {TARGET_KEY_MAX_MS:.0f} ms   "
            f"{_verdict(p95 <= TARGET_KEY_P95_MS and max(keys_ms) <= TARGET_KEY_MAX_MS)}"
        )
        print(
            "   the five slowest keys, pressed at (ms after their prompt was sent): "
            + ", ".join(f"{ms:.0f} ms at +{at:.0f}" for ms, at in sorted(slowest)[:-6:-1])
        )
    if lags:
        worst = max(lags)
        print(
            f"   lag without typing: median {statistics.median(lags):.1f} ms, "
            f"worst {worst:.1f} ms   target <= {target:.0f} ms   "
            f"{_verdict(worst <= target)}"
        )


def write_big_thread(home: Path, messages: int) -> tuple[str, int]:
    """A thread of `messages` user/assistant messages (with their turn markers)."""
    from engine import events as ev
    from engine.log import SessionLog
    from engine.threads.paths import LOG_NAME, thread_dir

    thread_id = "bench-big"
    path = thread_dir(home, USER_ID, thread_id) / LOG_NAME
    if path.exists():  # written earlier in this run (bench_resume): reuse it
        return thread_id, path.read_bytes().count(b"\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    log = SessionLog.open(path)
    reply = (
        "Here is what I found.\n\n"
        "- the log is append-only, one JSON object per line\n"
        "- compaction replaces a span with a checkpoint\n\n"
        "```python\nfor event in log.events:\n    print(event['kind'])\n```\n\n"
        "The archive keeps every replaced message word for word, so `history_search` "
        "can still find it later."
    )
    for turn in range(1, messages // 2 + 1):
        log.append(ev.TurnStart(turn=turn, items=[]))
        log.append(ev.UserMessage(text=f"Question {turn}: how does the session log stay safe?"))
        log.append(
            ev.AssistantMessage(
                content=f"Answer {turn}. {reply}",
                tool_calls=[],
                usage={"prompt_tokens": 10, "completion_tokens": 90, "total_tokens": 100},
                model="scripted-model",
                finish_reason="stop",
            )
        )
        log.append(ev.TurnEnd(turn=turn, status="ok"))
    log.flush()
    count = len(log.events)
    log.close()
    return thread_id, count


def bench_resume(work: Path, base_url: str, sizes: Sequence[int], runs: int) -> None:
    """Spawn -> ready of a resumed thread per size, against the baseline's launch."""
    config = write_config(work, base_url)
    from engine.threads.paths import thread_dir

    threads: dict[int, tuple[list[str], int, float, Path]] = {}
    for size in sizes:
        home = work / f"big-home-{size}"
        t0 = time.perf_counter()
        thread_id, events = write_big_thread(home, size)
        args = ["--home", str(home), "--config", str(config), "--thread", thread_id]
        where = thread_dir(home, USER_ID, thread_id)
        threads[size] = (args, events, time.perf_counter() - t0, where)
    walls: dict[int | str, list[float]] = {"bare": [], **{size: [] for size in sizes}}
    cold: dict[int, list[float]] = {size: [] for size in sizes}
    rss: dict[int, list[dict[str, float]]] = {size: [] for size in sizes}
    launch_args = ["--home", str(work / "launch-home"), "--config", str(config)]
    for i in range(runs + 1):  # the first round warms the page cache and .pyc files
        spawned, records = run_child("launch", "bare", launch_args, [], 60)
        if i:
            walls["bare"].append((records[0]["ready"] - spawned) * 1000)
        for size in sizes:
            # Cold: nothing kept from a last session (after a crash, or an upgrade of the
            # renderer): no drawn lines, no replay snapshot. Its quit keeps both, as a
            # user's Ctrl+Q does, so the next run is the usual resume of a thread quit.
            (threads[size][3] / "drawn.json").unlink(missing_ok=True)
            (threads[size][3] / "session.jsonl.replay").unlink(missing_ok=True)
            spawned, records = run_child("resume", "trove", threads[size][0], [], 120)
            if i:
                cold[size].append((records[0]["ready"] - spawned) * 1000)
            spawned, records = run_child("resume", "trove", threads[size][0], [], 120)
            if i:
                walls[size].append((records[0]["ready"] - spawned) * 1000)
                rss[size].append(records[0]["rss"])
    bare = statistics.median(walls["bare"])
    print(
        "4. resume with --thread to a ready prompt (spawn -> the end of the first frame "
        f"drawn with the prompt focused and the thread open), median of {runs}, alternating "
        "with the baseline's launch; each size opened cold (nothing kept from a last "
        "session), then as it was quit (Ctrl+Q keeps the newest replies' drawn lines and, "
        "for a long log, a replay snapshot)"
    )
    print(f"   baseline launch: {bare:.0f} ms (runs {' '.join(f'{v:.0f}' for v in walls['bare'])})")
    for size in sizes:
        _, events, wrote, _ = threads[size]
        ms = statistics.median(walls[size])
        ratio = ms / bare
        vm = statistics.median(r["VmRSS"] for r in rss[size])
        peak = max(r["VmHWM"] for r in rss[size])
        target_ratio, target_rss = TARGET_RESUME.get(size, (None, None))
        cold_ms = statistics.median(cold[size])
        print(
            f"   {size:>7,} messages ({events:,} events, written in {wrote:.1f} s): {ms:.0f} ms "
            f"(runs {' '.join(f'{v:.0f}' for v in walls[size])}), RSS {vm:.0f} MB "
            f"(peak {peak:.0f} MB); cold {cold_ms:.0f} ms "
            f"(runs {' '.join(f'{v:.0f}' for v in cold[size])})"
        )
        if target_ratio is not None:
            print(
                f"   resume {size:,} / baseline launch: {ratio:.2f} x   "
                f"target <= {target_ratio} x   {_verdict(ratio <= target_ratio)}"
            )
            print(
                f"   (cold, after a crash or an upgrade: {cold_ms / bare:.2f} x; the target is "
                "the usual resume's, of a thread quit with Ctrl+Q)"
            )
        if target_rss is not None:
            print(
                f"   resume {size:,} RSS when ready: {vm:.0f} MB   target <= {target_rss:.0f} MB   "
                f"{_verdict(vm <= target_rss)}"
            )


def bench_big(work: Path, base_url: str, messages: int, budget: float) -> None:
    home = work / f"big-home-{messages}"  # bench_resume's thread of this size, when it ran
    thread_id, events = write_big_thread(home, messages)
    config = write_config(work, base_url)
    trove_args = ["--home", str(home), "--config", str(config), "--thread", thread_id]
    spawned, records = run_child(
        "big", "trove", trove_args, ["--load-budget", str(budget)], budget + 90
    )
    rec = records[0]
    rss_ready, rss_all = rec["rss_ready"], rec["rss_all"]
    steps = rec["load_steps_ms"]
    shown, loaded = rec["mounted_ready"], rec["mounted_all"]

    def moves(pair: Sequence[float]) -> str:
        return f"first frame {pair[0]:.0f} ms, arrived {pair[1]:.0f} ms"

    print(
        f"5. a thread of {messages} messages ({events} events), "
        f"resumed with --thread: scrolling and loading earlier messages"
    )
    print(
        f"   spawn -> ready: {(rec['ready'] - spawned) * 1000:.0f} ms "
        f"({shown} messages mounted; the rest load on demand)"
    )
    print(
        f"   RSS when ready: {rss_ready['VmRSS']:.0f} MB (peak {rss_ready['VmHWM']:.0f} MB)"
        f"   target <= {TARGET_RSS_MB:.0f} MB   {_verdict(rss_ready['VmRSS'] <= TARGET_RSS_MB)}"
    )
    print(f"   Home (top of what is mounted): {moves(rec['home_ms'])}")
    if steps:
        print(
            f"   load earlier: {len(steps)} steps, total {sum(steps) / 1000:.1f} s, "
            f"per step p50 {_pct(steps, 0.5):.0f} ms, first {steps[0]:.0f} ms, "
            f"last {steps[-1]:.0f} ms, max {max(steps):.0f} ms"
            + ("" if rec["all_loaded"] else f"  (stopped by the {budget:.0f} s budget)")
        )
    print(
        f"   after loading earlier, {loaded} messages mounted (the window's bound; "
        f"{rec['dom_nodes']} DOM nodes): RSS {rss_all['VmRSS']:.0f} MB "
        f"(peak {rss_all['VmHWM']:.0f} MB)   {_verdict(rss_all['VmRSS'] <= TARGET_RSS_MB)}"
    )
    print(
        f"   End (back to the newest): {moves(rec['end_ms'])}; "
        f"then Ctrl+Home (the thread's start): {moves(rec['home_all_ms'])}; "
        f"Ctrl+End: {moves(rec['end_all_ms'])}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rest: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, rest = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="launch runs per app (median)")
    parser.add_argument("--keys", type=int, default=200, help="keystrokes to time")
    parser.add_argument("--stream-runs", type=int, default=3, help="streamed replies to time")
    parser.add_argument(
        "--typing-runs", type=int, default=3, help="streamed replies typed into, after those"
    )
    parser.add_argument(
        "--big-sizes",
        default="10000,100000",
        help="comma-separated message counts of the resumed threads (the first is also scrolled)",
    )
    parser.add_argument("--big-runs", type=int, default=9, help="resume runs per size (median)")
    parser.add_argument(
        "--load-budget",
        type=float,
        default=45.0,
        help="seconds allowed for loading all earlier messages",
    )
    parser.add_argument(
        "--only",
        default="launch,keys,stream,big",
        help="comma-separated subset of: launch,keys,stream,big",
    )
    parser.add_argument("--child", choices=sorted(SCENARIOS), help=argparse.SUPPRESS)
    parser.add_argument("--child-app", choices=("trove", "bare"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--rates",
        default=",".join(f"{r:.0f}" for r in STREAM_RATES),
        help="comma-separated tokens/s for the stream figures",
    )
    parser.add_argument("--serve", choices=("keys", "stream"), help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, default=STREAM_RATES[0], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args, rest)
    if args.serve:
        return serve_main(args.serve, args.rate)

    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    wanted = {part.strip() for part in args.only.split(",") if part.strip()}
    started = time.perf_counter()
    print(
        f"Trove TUI benchmark: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"pty {COLS}x{ROWS}, load average {os.getloadavg()[0]:.2f}; targets from DESIGN.md"
    )
    work = Path(tempfile.mkdtemp(prefix="trove-bench-tui-"))
    try:
        if "launch" in wanted:
            with Server("stream") as idle:  # never called: launching makes no request
                bench_launch(work, idle.base_url, args.runs)
        if "keys" in wanted:
            bench_keys(work, args.keys)
        if "stream" in wanted:
            for rate in (float(r) for r in args.rates.split(",") if r.strip()):
                bench_stream(work, args.stream_runs, rate, args.typing_runs)
        if "big" in wanted:
            sizes = [int(x) for x in args.big_sizes.split(",") if x.strip()]
            with Server("stream") as idle:
                bench_resume(work, idle.base_url, sizes, args.big_runs)
                if sizes:
                    bench_big(work, idle.base_url, sizes[0], args.load_budget)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"(total {time.perf_counter() - started:.0f} s; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} - other work on this machine "
        f"skews these figures)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
