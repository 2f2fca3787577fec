"""No MCP server outlives Trove: not after a quit, and not after a kill -9.

`trove -p` calls a tool that hangs; the server (tests/mcp_server.py, with
--linger: it does not exit at the end of its stdin) writes its pid; Trove is
killed with SIGKILL, and the server must be gone soon after, which is the
guard's doing (engine/mcp/guard.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from tests.cli_support import REPO, Env

SERVER = str(Path(__file__).with_name("mcp_server.py"))
BOUND = 20.0
"""Seconds to wait for a state before the test fails (a bound, never a delay)."""


def alive(pid: int) -> bool:
    """Running (a zombie no one has reaped yet counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(what: str, check: object) -> None:
    deadline = time.monotonic() + BOUND
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def start_hanging(env: Env, pidfile: Path) -> subprocess.Popen[bytes]:
    with env.config.open("a", encoding="utf-8") as f:
        f.write(
            "mcp:\n  servers:\n    test:\n"
            f"      command: {sys.executable}\n"
            f"      args: [{SERVER}, --pidfile, {pidfile}, --linger]\n"
            "      allow: [hang]\n"
        )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    environment["PYTHONPATH"] = str(REPO)
    return subprocess.Popen(
        [sys.executable, "-m", "cli.main", "-p", "hang", *env.common],
        cwd=REPO,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_no_server_outlives_a_killed_trove(
    env: Env, server: ScriptedServer, tmp_path: Path
) -> None:
    server.script(s.tool_calls([("hang", {})]), s.text("never"))
    pidfile = tmp_path / "server.pid"
    trove = start_hanging(env, pidfile)
    try:
        wait_for("the server's pid", lambda: pidfile.exists() and pidfile.read_text())
        pid = int(pidfile.read_text())
        wait_for("the tool call", lambda: len(server.requests) >= 1)
        assert alive(pid)
        trove.send_signal(signal.SIGKILL)
        trove.wait()
        wait_for("the server to die with Trove", lambda: not alive(pid))
    finally:
        if trove.poll() is None:
            trove.kill()
            trove.wait()


def test_no_server_outlives_a_trove_that_quits(
    env: Env, server: ScriptedServer, tmp_path: Path
) -> None:
    server.script(s.tool_calls([("add", {"a": 1, "b": 1})]), s.text("2"))
    pidfile = tmp_path / "server.pid"
    with env.config.open("a", encoding="utf-8") as f:
        f.write(
            "mcp:\n  servers:\n    test:\n"
            f"      command: {sys.executable}\n"
            f"      args: [{SERVER}, --pidfile, {pidfile}]\n"
            "      allow: [add]\n"
        )
    from tests.cli_support import trove

    result = trove("-p", "add", *env.common)
    assert result.returncode == 0, result.stderr
    assert not alive(int(pidfile.read_text()))
