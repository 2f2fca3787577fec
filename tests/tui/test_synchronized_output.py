"""A frame is drawn whole: wrapped in synchronized output (DEC mode 2026) where the terminal
has it.

Textual asks the terminal whether it has mode 2026 (DECRQM) when the app
starts and, once told so, writes each frame between `CSI ? 2026 h` and
`CSI ? 2026 l`, so the terminal shows it at once instead of a half-drawn
screen. tmux 3.3, which the other terminal tests run in, neither answers nor
honours it (3.7 does both), so here the test is the terminal: `trove` runs
in a pseudo-terminal whose other end answers the question, or stays silent,
and reads every byte the app writes.
"""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli_support import REPO, Env

QUERY = b"\x1b[?2026$p"
SUPPORTED = b"\x1b[?2026;2$y"
"""The answer of a terminal that has the mode (2: known, reset)."""
BEGIN, END = b"\x1b[?2026h", b"\x1b[?2026l"
LIMIT = 30.0
"""Seconds a wait on the app's output may take before the test fails (a bound)."""


class Terminal:
    """`trove` in a pseudo-terminal of 100x30; this side reads all it writes."""

    def __init__(self, env: Env, home: Path, *, answer: bool) -> None:
        self.answer = answer
        self.output = bytearray()
        self.answered_at: int | None = None
        """Where the output stood when the question was answered."""
        self._lock = threading.Lock()
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        environment = {
            k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TMUX", "TEXTUAL"))
        }
        environment.update(HOME=str(home), TERM="xterm-256color")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", *env.common],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=environment,
            cwd=REPO,
            start_new_session=True,
        )
        os.close(slave)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self.output.extend(data)
                if self.answer and self.answered_at is None and QUERY in self.output:
                    self.answered_at = len(self.output)
                    os.write(self.master, SUPPORTED)

    def since(self, at: int) -> bytes:
        with self._lock:
            return bytes(self.output[at:])

    def wait(self, text: bytes, after: int = 0) -> None:
        self.wait_for(lambda output: text in output, f"{text!r}", after)

    def wait_for(self, ready: Callable[[bytes], bool], what: str, after: int = 0) -> None:
        """Until the output since `after` is `ready` (a state wait, bounded by LIMIT)."""
        deadline = time.monotonic() + LIMIT
        while not ready(self.since(after)):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                tail = self.since(0)[-2000:]
                raise AssertionError(f"the app never wrote {what}: ...{tail!r}")
            time.sleep(0.02)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=LIMIT)
        os.close(self.master)


@pytest.fixture
def terminal(env: Env, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Terminal]:
    term = Terminal(env, tmp_path, answer=request.param)
    try:
        term.wait(b"Welcome")
        yield term
    finally:
        term.close()


def spans(output: bytes) -> list[tuple[int, int]]:
    """Each synchronized update, begin to end; they never nest, every one ends."""
    found: list[tuple[int, int]] = []
    at = 0
    while (begin := output.find(BEGIN, at)) >= 0:
        end = output.find(END, begin)
        assert end >= 0, "an update that never ends"
        assert output.find(BEGIN, begin + 1, end) < 0, "nested updates"
        found.append((begin, end))
        at = end
    return found


@pytest.mark.parametrize("terminal", [True], indirect=True)
def test_once_the_terminal_says_it_has_the_mode_every_frame_is_drawn_whole(terminal) -> None:
    assert terminal.answered_at is not None  # the app asked
    terminal.wait(BEGIN, terminal.answered_at)  # and took the answer
    start = len(terminal.since(0))
    terminal.type("sync probe")

    def drawn_and_ended(output: bytes) -> bool:
        # The pty hands a frame over in pieces: "probe" can be read before its update's end.
        return b"probe" in output and output.rfind(BEGIN) < output.rfind(END)

    terminal.wait_for(drawn_and_ended, "the probe, its update ended", start)
    output = terminal.since(start)
    updates = spans(output)
    assert updates
    drawn = [i for i in range(len(output)) if output.startswith(b"probe", i)]
    assert all(any(b < i < e for b, e in updates) for i in drawn)  # inside an update
    gaps = zip(updates, updates[1:], strict=False)
    outside = b"".join(output[end + len(END) : begin] for (_, end), (begin, _) in gaps)
    assert b"probe" not in outside


@pytest.mark.parametrize("terminal", [False], indirect=True)
def test_a_terminal_that_does_not_answer_is_never_sent_the_mode(terminal) -> None:
    terminal.type("sync probe")
    terminal.wait(b"probe")
    assert QUERY in terminal.since(0)
    assert BEGIN not in terminal.since(0)
