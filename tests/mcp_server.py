"""A real MCP server for the tests, written with the SDK (not a mock of the protocol).

    python tests/mcp_server.py [--tools N] [--http PORT] [--pidfile PATH] [--linger]

Over stdio by default; with --http, streamable HTTP on 127.0.0.1:PORT at /mcp.
Its tools: `echo`, `add`, and the fault family: `crash` (the process dies
mid-call), `hang` (never answers), `huge` (a result of N characters), `hostile`
(terminal escape sequences), plus `--tools N` filler tools (`t000`...).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer


def build(extra_tools: int) -> MCPServer:
    server = MCPServer("trove-test")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text as it was given."""
        return text

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two integers."""
        return str(a + b)

    @server.tool()
    def crash(code: int = 3) -> str:
        """Exit the server process in the middle of the call."""
        print("crashing now: the test asked for it", file=sys.stderr, flush=True)
        os._exit(code)

    @server.tool()
    def hang(seconds: float = 3600) -> str:
        """Take a very long time."""
        time.sleep(seconds)
        return "woke up"

    @server.tool()
    def huge(chars: int = 100_000) -> str:
        """A result of `chars` characters, numbered lines."""
        lines, size, n = [], 0, 0
        while size < chars:
            line = f"line {n:07d} " + "x" * 40
            lines.append(line)
            size += len(line) + 1
            n += 1
        return "\n".join(lines)[:chars]

    @server.tool()
    def hostile() -> str:
        """Terminal escape sequences and control bytes."""
        return "before\x1b[2J\x1b]0;pwned\x07\x1b[31mred\x1b[0m\x08\x00after"

    for i in range(extra_tools):
        name = f"t{i:03d}"

        server.add_tool(_filler(name), name=name, description=f"filler tool {name}")
    return server


def _filler(name: str):  # noqa: ANN202 - the SDK reads the signature
    def filler(x: str = "") -> str:
        return f"{name}:{x}"

    return filler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--pidfile", type=Path, default=None)
    parser.add_argument(
        "--linger", action="store_true", help="never exit, even at the end of stdin"
    )
    options = parser.parse_args()
    if options.linger:  # a badly behaved server: a thread that keeps the process alive
        threading.Thread(target=time.sleep, args=(3600,), daemon=False).start()
    if options.pidfile is not None:
        options.pidfile.write_text(str(os.getpid()))
    server = build(options.tools)
    if options.http is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.http)


if __name__ == "__main__":
    main()
