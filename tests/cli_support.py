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


def trove(
    *args: str, stdin: str | None = None, stdin_from: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `trove ARGS`; stdin is a pipe holding `stdin` (empty by default), or the file
    `stdin_from` (bytes as they are, or /dev/null)."""
    if stdin_from is not None:
        with stdin_from.open("rb") as file:
            return _run(args, {"stdin": file})
    return _run(args, {"input": stdin if stdin is not None else ""})


def _run(args: tuple[str, ...], given: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        **given,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_clean_env(),
        timeout=TIMEOUT,
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
