"""The real app in a real terminal: tmux runs `trove`, a test types and reads the screen.

A pilot posts Textual events; it cannot send the bytes a terminal sends (a paste whose
line breaks are CR, a burst of keys that reaches the app in one read). These tests need
`tmux`: without it they are skipped, except in CI, where a missing tmux is a failure
(`.ci/run` installs it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli_support import REPO, Env

LIMIT = 20.0
"""Seconds a wait on the screen may take before the test fails (a bound, not a delay)."""
POLL = 0.02
"""Seconds between two reads of the screen while waiting for a state."""


def need_tmux() -> None:
    if shutil.which("tmux") is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is not installed (.ci/run installs it)")
        pytest.skip("tmux is not installed")


class Terminal:
    """`trove` in a detached tmux session of its own (its own server socket)."""

    def __init__(self, env: Env, tmp: Path, *args: str, size: tuple[int, int] = (100, 30)):
        need_tmux()
        self.socket = f"trove-test-{os.getpid()}-{id(self)}"
        self.target = "trove"
        environment = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("OPENAI_", "TMUX")) and key != "TROVE_HOME"
        }
        environment.update(HOME=str(tmp), TERM="xterm-256color")
        command = [sys.executable, "-m", "cli.main", *env.common, *args]
        width, height = size
        self._tmux(
            "new-session", "-d", "-x", str(width), "-y", str(height), "-s", self.target,
            "-c", str(REPO), *self._env_args(environment), " ".join(map(_quote, command)),
        )  # fmt: skip

    @staticmethod
    def _env_args(environment: dict[str, str]) -> list[str]:
        args: list[str] = []
        for key, value in environment.items():
            args += ["-e", f"{key}={value}"]
        return args

    def _tmux(self, *args: str, input: bytes | None = None) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            input=input,
            capture_output=True,
            check=True,
            timeout=LIMIT,
        )
        return done.stdout.decode("utf-8", "replace")

    def screen(self, *, styled: bool = False) -> str:
        """What the terminal shows now (with its colours as escapes when `styled`)."""
        return self._tmux("capture-pane", "-p", *(["-e"] if styled else []), "-t", self.target)

    def keys(self, *keys: str) -> None:
        """Keys by tmux's names (Tab, Enter, C-c …), each sent as the terminal sends it."""
        self._tmux("send-keys", "-t", self.target, *keys)

    def type(self, text: str) -> None:
        """Text written to the terminal in one write, as a fast typist's burst arrives."""
        self._tmux("send-keys", "-t", self.target, "-l", text)

    def paste(self, text: str) -> None:
        """A bracketed paste as tmux makes it: line breaks sent as CR (paste-buffer -p)."""
        self._tmux("load-buffer", "-b", "test", "-", input=text.encode())
        self._tmux("paste-buffer", "-p", "-b", "test", "-t", self.target)

    def wait(self, ready: Callable[[str], bool], what: str, *, styled: bool = False) -> str:
        """The screen, once `ready(screen)` holds; fails after LIMIT seconds saying `what`."""
        deadline = time.monotonic() + LIMIT
        while True:
            shown = self.screen(styled=styled)
            if ready(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never showed {what}:\n{self.screen()}")
            time.sleep(POLL)

    def wait_for(self, text: str) -> str:
        return self.wait(lambda shown: text in shown, repr(text))

    def close(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=LIMIT
        )


def prompt_border(screen: str) -> str:
    """The prompt's top border line as drawn, colours included: it changes with focus."""
    lines = screen.splitlines()
    return next(line for line in reversed(lines) if "▔▔▔" in line)


def prompt_text(screen: str) -> list[str]:
    """The lines inside the prompt's box, as shown."""
    lines = screen.splitlines()
    top = max(i for i, line in enumerate(lines) if "▔▔▔" in line)
    bottom = max(i for i, line in enumerate(lines) if "▁▁▁" in line)
    inner = [re.sub(r"^▊\s?|\s*▎$", "", line).rstrip() for line in lines[top + 1 : bottom]]
    return inner


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def until(ready: Callable[[], bool], what: str) -> None:
    """Block until `ready()` holds (the scripted server's requests, a file); LIMIT bounds it."""
    deadline = time.monotonic() + LIMIT
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"never reached: {what}")
        time.sleep(POLL)
