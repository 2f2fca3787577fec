"""The live check's endpoint: the private endpoints file, read and checked, and the
config it becomes. The file holds a credential, so it must never be committed: a file
tracked by git is refused, and the key never reaches the output or another endpoint."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from msgspec.structs import replace

from engine.config import Config, parse_config
from engine.errors import TroveError


class UsageError(TroveError):
    """A problem with the command line or the endpoints file: one line, exit 2."""


@dataclass(frozen=True)
class Endpoint:
    """Where to send requests; the key stays out of repr so no log line leaks it."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)

    @property
    def public_url(self) -> str:
        """The base URL as written to the output: no user info, query or fragment."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = host + (f":{parts.port}" if parts.port is not None else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


_ENDPOINT_KEYS = ("base_url", "model", "api_key")


def _tracked_by_git(path: Path) -> str | None:
    """The work tree that tracks `path`, or None (untracked, no repository, no git)."""
    cwd = path.parent
    try:
        tracked = subprocess.run(
            ["git", "ls-files", "--error-unmatch", "--", path.name],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
        if tracked.returncode != 0:
            return None
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return top.stdout.strip() or str(cwd)


def load_endpoint(path: Path) -> Endpoint:
    """Read and validate the endpoints file; every problem is one UsageError line.

    Unknown keys are refused rather than ignored, so a misspelt "apikey" is
    not silently sent as no key at all.
    """
    where = f"endpoints file {path}"
    if not path.is_file():
        raise UsageError(f"{where}: no such file")
    work_tree = _tracked_by_git(path.resolve())
    if work_tree is not None:
        raise UsageError(
            f"{where}: tracked by git in {work_tree}; it holds a credential and must never "
            "be committed (untrack it and keep it outside the work tree)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{where}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{where}: not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{where}: expected a JSON object with base_url, model, api_key")
    unknown = sorted(str(key) for key in data if key not in _ENDPOINT_KEYS)
    if unknown:
        raise UsageError(
            f"{where}: unknown key {unknown[0]!r} (expected base_url, model, optional api_key)"
        )
    base_url = data.get("base_url")
    parts = urlsplit(base_url) if isinstance(base_url, str) else None
    try:
        port_ok = parts is not None and (parts.port is None or parts.port > 0)
    except ValueError:
        port_ok = False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise UsageError(f"{where}: 'base_url' must be an http:// or https:// URL")
    model = data.get("model")
    if not isinstance(model, str) or not model.strip():
        raise UsageError(f"{where}: 'model' must be a non-empty string")
    api_key = data.get("api_key")
    if api_key is not None and (not isinstance(api_key, str) or not api_key):
        raise UsageError(f"{where}: 'api_key' must be a non-empty string or null")
    return Endpoint(base_url, model, api_key)


def build_config(endpoint: Endpoint, source: str) -> Config:
    """Trove's config for the check, validated by the engine's own parser.

    The provider is pinned to "openai" so an installed offline model can never
    stand in for the endpoint. keep_recent_tokens 0 makes /compact take every
    planted message; automatic compaction is off so no unplanned summary
    (without the omit instruction) can run mid-check. The environment is not
    consulted: the endpoints file alone says where requests go (see
    `isolate_key` for the key).
    """
    return parse_config(
        {
            "model": {
                "provider": "openai",
                "base_url": endpoint.base_url,
                "api_key": endpoint.api_key,
                "name": endpoint.model,
                "tools": "on",
            },
            "compaction": {"auto": False, "keep_recent_tokens": 0},
            "task_continuity": {"enabled": True},
        },
        source=source,
        env={},
    )


def isolate_key(endpoint: Endpoint) -> None:
    """Without an api_key in the file, make sure no key from the environment is sent.

    The model client falls back to $OPENAI_API_KEY, which belongs to some
    other endpoint; sending it to the one under test would leak it.
    """
    if endpoint.api_key is None:
        os.environ.pop("OPENAI_API_KEY", None)


def without_tools(config: Config) -> Config:
    """The planting config: no tools, so the model cannot copy the codes into notes.

    Notes survive compaction and ride along in every request; a code saved
    as a note while planting would hand the rebuilt agent its answer.
    """
    return replace(config, model=replace(config.model, tools="off"))
