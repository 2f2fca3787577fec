"""The offline model's server in a child process, so starting it never stalls the app.

``xllamacpp.Server(...)`` holds the GIL for its whole start, so even in a worker
thread it would freeze the UI loop; in a process of its own the start costs the app
only a wait on a pipe. The child is the same :class:`LocalServer`: it reads its
settings as one JSON line on stdin, answers one JSON line on stdout (``{"url": …}``
or ``{"error": …}``), and serves until stdin closes, as it does when the app dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

from engine.model import ModelError
from engine.model.local.runner import LocalServer, LocalSettings

_SOURCE_ROOT = str(Path(__file__).resolve().parents[3])
"""The directory `engine` is in: the child imports Trove from the same files."""
STOP_WAIT = 5.0
"""Seconds the child gets to stop its server after stdin closes, before it is killed."""


class ChildLocalServer(LocalServer):
    """A :class:`LocalServer` whose server runs in a child process (module docstring)."""

    def __init__(self, settings: LocalSettings) -> None:
        super().__init__(settings)
        self._proc: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int | None:
        """The server process, while it runs (its memory is the offline model's cost)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._base_url is not None

    async def ensure_started(self) -> str:
        if self._base_url is not None:
            return self._base_url
        starting = self._starting
        if starting is None or (
            starting.done() and (starting.cancelled() or starting.exception() is not None)
        ):
            starting = self._starting = asyncio.ensure_future(self._start())
        return await asyncio.shield(starting)

    async def _start(self) -> str:
        settings = dataclasses.asdict(self.settings)
        settings["model_path"] = str(self.settings.model_path)
        environ = dict(os.environ)
        environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (_SOURCE_ROOT, environ.get("PYTHONPATH")) if p
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "engine.model.local.child",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,  # llama.cpp's logs would tear the TUI
            env=environ,
            start_new_session=True,  # the terminal's Ctrl+C is the app's, not the server's
        )
        assert proc.stdin is not None and proc.stdout is not None
        request = {"settings": settings, "api_key": self.api_key}
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        await proc.stdin.drain()
        line = await proc.stdout.readline()
        answer: dict[str, Any] = {}
        with contextlib.suppress(ValueError):
            answer = json.loads(line) if line else {}
        url = answer.get("url")
        if not isinstance(url, str):
            await _stop(proc)
            why = answer.get("error") or (
                f"cannot start the local model {self.settings.model_path.name}:"
                f" its server process exited ({proc.returncode})"
            )
            raise ModelError("unreachable", str(why))
        self._proc = proc
        self._base_url = url
        return url

    def start_blocking(self) -> str:
        raise NotImplementedError("the child process starts the server; await ensure_started")

    def close(self) -> None:
        proc, self._proc = self._proc, None
        self._base_url = None
        self._starting = None
        if proc is not None and proc.returncode is None:
            proc.kill()

    async def aclose(self) -> None:
        starting = self._starting
        if starting is not None and not starting.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(starting)
        proc, self._proc = self._proc, None
        self._base_url = None
        self._starting = None
        if proc is not None:
            await _stop(proc)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Close the child's stdin (its signal to stop) and wait; kill it if it lingers."""
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    try:
        await asyncio.wait_for(proc.wait(), STOP_WAIT)
    except TimeoutError:
        proc.kill()
        await proc.wait()


def _give_back_freed_memory() -> None:
    """Loading the model frees scratch memory that glibc keeps mapped in its heaps, counted
    as this process's memory for as long as it serves unless handed back to the OS.
    Elsewhere than Linux a no-op."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def main() -> int:
    """The child: start, say where (or why not), serve until stdin closes."""
    request = json.loads(sys.stdin.readline())
    raw = request["settings"]
    settings = LocalSettings(**{**raw, "model_path": Path(raw["model_path"])})
    server = LocalServer(settings)
    server.api_key = request["api_key"]
    try:
        url = server.start_blocking()
    except ModelError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        return 1
    _give_back_freed_memory()
    print(json.dumps({"url": url}), flush=True)
    sys.stdin.read()  # until the app closes the pipe, or dies
    server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
