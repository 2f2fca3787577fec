"""The `trove` command run as a user would: a subprocess with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 30


@dataclass
class Env:
    home: Path
    config: Path

    @property
    def common(self) -> list[str]:
        return ["--home", str(self.home), "--config", str(self.config)]


def _clean_env() -> dict[str, str]:
    """The caller's environment without anything that would redirect the client or data."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("OPENAI_") and key != "TROVE_HOME"
    }


_CAPPED = (
    "import resource, runpy, sys\n"
    "cap = int(sys.argv.pop(1))\n"
    "resource.setrlimit(resource.RLIMIT_AS, (cap, cap))\n"
    "runpy.run_module('cli.main', run_name='__main__', alter_sys=True)\n"
)
"""`python -m cli.main` with its address space capped first (by the child itself: a
`preexec_fn` is not safe to run in a forked copy of a test process that has threads)."""


def trove(
    *args: str,
    stdin: str | None = None,
    stdin_from: Path | None = None,
    timeout: float = TIMEOUT,
    memory: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `trove ARGS` in a child; stdin is a pipe holding `stdin` (empty by default), or
    the file `stdin_from` (bytes as they are, or /dev/null). `memory` caps its address
    space (bytes): an allocation past it is a MemoryError in the child instead of the
    machine's memory."""
    if memory is None:
        command = [sys.executable, "-m", "cli.main", *args]
    else:
        command = [sys.executable, "-c", _CAPPED, str(memory), *args]
    if stdin_from is not None:
        with stdin_from.open("rb") as file:
            return _run(command, timeout, {"stdin": file})
    return _run(command, timeout, {"input": stdin if stdin is not None else ""})


def _run(
    command: list[str], timeout: float, given: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        **given,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_clean_env(),
        timeout=timeout,
    )


def write_config(path: Path, base_url: str) -> None:
    path.write_text(
        "model:\n"
        f"  base_url: {base_url}\n"
        "  api_key: test-key\n"
        "  name: scripted-model\n"
        "  max_retries: 0\n",
        encoding="utf-8",
    )
