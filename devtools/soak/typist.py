"""The child's side of a round: the Typist that types at its pipe or terminal, and the
LogWatcher that follows its log for the event a kill is aimed at."""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from engine import events as ev
from engine.events import LogEvent as Event
from engine.log import LogCorruptError, decode_line


class Typist:
    """Types the round's lines: all at once into a pipe, or at a terminal like a user.

    Through a pipe the REPL takes one line after the previous one finished.
    At a terminal (a pty) lines come with random pauses, so prompts are typed
    while a reply streams; a `/compact` is typed once the thread is idle and
    the lines after it follow at once, so they queue while it runs. The
    terminal's output is drained (and its cursor-position queries answered),
    so the child never blocks on writing.
    """

    IDLE = (ev.kind_of(ev.TurnEnd), ev.kind_of(ev.CommandDone), ev.kind_of(ev.EndSeed))

    def __init__(
        self,
        child: subprocess.Popen[bytes],
        master: int | None,
        log_path: Path,
        rng: random.Random,
    ) -> None:
        self.child = child
        self.master = master
        self.log_path = log_path
        self.offset = log_path.stat().st_size
        self.gaps = [rng.uniform(0.0, 0.5) for _ in range(16)]
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def type(self, lines: list[str]) -> None:
        if self.master is None:
            assert self.child.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self.child.stdin.write("".join(line + "\n" for line in lines).encode())
                self.child.stdin.flush()
            return
        for target in (self._drain, lambda: self._type(lines)):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self.threads.append(thread)

    def _type(self, lines: list[str]) -> None:
        assert self.master is not None
        after_compact = False
        typed = 0
        for index, line in enumerate(lines):
            if line.startswith("/"):
                while not self.stop.is_set() and not self._idle(typed):
                    self.stop.wait(0.02)
            elif not after_compact:
                self.stop.wait(self.gaps[index % len(self.gaps)])
            after_compact = after_compact or line.startswith("/")
            if self.stop.is_set():
                return
            with contextlib.suppress(OSError):
                os.write(self.master, line.encode() + b"\r")
            typed += not line.startswith("/")

    def _idle(self, typed: int) -> bool:
        """Every prompt typed so far was accepted, this child's last logged event leaves
        the thread idle, and 20 ms later it still does."""
        with contextlib.suppress(OSError, ValueError), self.log_path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(min(self.offset, size))
            lines = fh.read().split(b"\n")
            kinds = [json.loads(line).get("kind") for line in lines[:-1]]
            if (
                kinds.count(ev.kind_of(ev.InboxQueued)) < typed
                or not kinds
                or kinds[-1] not in self.IDLE
            ):
                return False
            self.stop.wait(0.02)
            return os.fstat(fh.fileno()).st_size == size
        return False

    def _drain(self) -> None:
        assert self.master is not None
        while not self.stop.is_set():
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            if b"\x1b[6n" in data:
                with contextlib.suppress(OSError):
                    os.write(self.master, b"\x1b[1;1R")

    def close(self) -> None:
        self.stop.set()
        if self.master is None:
            with contextlib.suppress(OSError):
                assert self.child.stdin is not None
                self.child.stdin.close()
            return
        os.close(self.master)  # the child is dead: the drain's read ends with EIO
        for thread in self.threads:
            thread.join(timeout=5)


class LogWatcher:
    """Follows the child's log from an offset, one complete line at a time."""

    def __init__(self, path: Path, offset: int) -> None:
        self.fh = path.open("rb")
        self.offset = offset
        self.buffer = b""
        self.first_seen: float | None = None

    def deadline(self) -> bool:
        """Give up on a target 6 s after the child's first event (it never came)."""
        return self.first_seen is not None and time.monotonic() - self.first_seen > 6.0

    def poll(self, matches: Callable[[Event], bool]) -> bool:
        size = os.fstat(self.fh.fileno()).st_size
        if size < self.offset:  # a torn tail was cut off at start-up
            self.offset, self.buffer = size, b""
        if size == self.offset:
            return False
        if self.first_seen is None:
            self.first_seen = time.monotonic()
        self.fh.seek(self.offset)
        data = self.fh.read(size - self.offset)
        self.offset += len(data)
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            try:
                event = decode_line(line)
            except (ValueError, LogCorruptError):
                continue
            if matches(event):
                return True
        return False

    def close(self) -> None:
        self.fh.close()
