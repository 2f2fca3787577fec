"""Runs an MCP server command so that it dies with Trove, even after a kill -9.

    python -I -S guard.py PARENT_PID COMMAND [ARGS...]

Linux only: the guard asks the kernel for SIGTERM when its parent (Trove) dies
(PR_SET_PDEATHSIG), starts the command with the same stdin/stdout/stderr, and on
that signal kills its whole process group, the server's children included. The
SDK starts the guard in a new session, so the group is the server's alone.
Stdlib only, and run by path, so it starts without importing Trove.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1


def _kill_group(signum: int = 0, frame: object = None) -> None:
    os.killpg(0, signal.SIGKILL)


def main(argv: list[str]) -> int:
    parent, command = int(argv[0]), argv[1:]
    signal.signal(signal.SIGTERM, _kill_group)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C in Trove's terminal is Trove's
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the SDK's own shutdown still ends the group on a clean exit
    if os.getppid() != parent:  # Trove died before the request took effect
        return 1
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"cannot start {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
