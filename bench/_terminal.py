"""A real terminal for benchmarks: tmux runs the app, a control-mode client reads its screen.

tests/tui/terminal.py starts a `tmux` process per command, which is fine for a test and
too slow to poll a screen every few milliseconds. Here one control-mode client (`tmux -C`,
attached to a session of its own so it never resizes the app's) carries every capture
and every key over one pipe, so a poll costs a fraction of a millisecond.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.ansi import AnsiDecoder
from rich.style import Style

SGR = re.compile(r"\x1b\[[0-9;:]*m")
APP = "app"


def available() -> bool:
    return shutil.which("tmux") is not None


class Tmux:
    """A private tmux server (its own socket) with one control client on it."""

    def __init__(self, env: Mapping[str, str]) -> None:
        """`env` is the server's, so every session's: nothing else of the caller's leaks in."""
        self.socket = f"trove-bench-{os.getpid()}"
        self._control = subprocess.Popen(
            [*self._base(), "-C", "new-session", "-s", "control", "sleep 86400"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=dict(env),
        )
        self.command("refresh-client -f no-output")  # no %output notifications: captures only
        self._path = Path(self.command("display-message -p '#{socket_path}'")[0].decode())

    def _base(self) -> list[str]:
        return ["tmux", "-L", self.socket, "-f", "/dev/null"]

    def command(self, line: str) -> list[bytes]:
        """Run one tmux command over the control pipe; its output lines."""
        pipe_in, pipe_out = self._control.stdin, self._control.stdout
        assert pipe_in is not None and pipe_out is not None
        pipe_in.write(line.encode() + b"\n")
        pipe_in.flush()
        out: list[bytes] = []
        inside = False
        while True:
            raw = pipe_out.readline()
            if not raw:
                raise RuntimeError(f"tmux control client ended during {line!r}")
            if not inside:
                # A block's last field is 1 for a command this client sent; the block
                # of the command that started the client says 0.
                inside = raw.startswith(b"%begin ") and raw.split()[-1] == b"1"
                continue
            if raw.startswith((b"%end ", b"%error ")):
                if raw.startswith(b"%error "):
                    raise RuntimeError(f"tmux {line!r}: {b''.join(out).decode(errors='replace')}")
                return out
            out.append(raw.rstrip(b"\n"))

    def start(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int]
    ) -> None:
        """Run `argv` in a fresh session of `size` (columns, rows) with exactly `env`."""
        width, height = size
        env_args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
        subprocess.run(
            [*self._base(), "new-session", "-d", "-s", APP, "-x", str(width), "-y", str(height),
             "-c", str(cwd), *env_args, shlex.join(argv)],
            check=True, capture_output=True, timeout=30,
        )  # fmt: skip

    def running(self) -> bool:
        lines = self.command("list-sessions -F '#{session_name}'")
        return any(line == APP.encode() for line in lines)

    def stop(self) -> None:
        """Close the app's session (its process gets SIGHUP) and wait until it has gone."""
        if self.running():
            self.command(f"kill-session -t {APP}")

    def screen(self) -> list[str]:
        """The app's screen, a row a line, with its colours as SGR escapes."""
        rows = self.command(f"capture-pane -p -e -t {APP}")
        return [row.decode("utf-8", "replace") for row in rows]

    def type(self, text: str) -> float:
        """Send `text` as typed keys (literal); when it was sent (time.monotonic)."""
        sent = time.monotonic()
        self.command(f"send-keys -t {APP} -l {shlex.quote(text)}")
        return sent

    def keys(self, *names: str) -> None:
        """Keys by tmux's names (Enter, C-q …)."""
        self.command(f"send-keys -t {APP} {' '.join(names)}")

    def close(self) -> None:
        subprocess.run([*self._base(), "kill-server"], capture_output=True, timeout=30)
        self._control.wait(timeout=10)
        self._path.unlink(missing_ok=True)  # a killed server leaves its socket behind


def plain(row: str) -> str:
    return SGR.sub("", row)


Cell = tuple[object, ...]


@functools.lru_cache(maxsize=8192)
def visible(row: str, width: int) -> tuple[Cell, ...]:
    """The first `width` cells of a styled row as they look: a character with its style,
    a blank by its background alone (a blank's foreground colour cannot be seen). One
    cell a character: the corpus and Trove's frame are drawn in single-width characters."""
    line = AnsiDecoder().decode_line(row)
    styles: list[Style] = [Style.null()] * len(line.plain)
    for span in line.spans:
        style = span.style if isinstance(span.style, Style) else Style.parse(span.style)
        styles[span.start : span.end] = [style] * (span.end - span.start)
    out: list[Cell] = []
    for char, style in zip(line.plain[:width], styles, strict=False):
        if char == " ":
            out.append((style.color if style.reverse else style.bgcolor, style.underline))
        else:
            out.append((char, style))
    return tuple(out)
