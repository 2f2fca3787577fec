"""The MCP servers of one open thread, their tools as the model sees them, and consent.

Nothing here imports the `mcp` SDK until the first request (`start`), so a
launch with servers configured costs no more than one without. Tool names are
the servers' own; a name two servers share (or one of Trove's own tools) is
prefixed `server__name` for each of them. A tool the config does not `allow`
runs only after the front end's consent hook says so (the engine never draws
the question itself); with no hook, such a tool is denied.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Literal

from msgspec import Struct

from engine.config.mcp import McpConfig
from engine.mcp.server import McpServer, McpServerError, State
from engine.mcp.text import result_text
from engine.model.tools import Tool, error_result
from engine.util.safe_text import safe_text

Answer = Literal["once", "thread", "deny"]


class ConsentRequest(Struct, frozen=True):
    """A tool not in `allow` about to run: what the front end shows before asking."""

    server: str
    tool: str
    arguments: str
    """The arguments as JSON, already escaped for a terminal (engine.util.safe_text)."""


ConsentHook = Callable[[ConsentRequest], Awaitable[Answer]]

_VALID_NAME = re.compile(r"[^A-Za-z0-9_-]")


class ServerView(Struct, frozen=True):
    """One server as /tools lists it; every string is safe for a terminal."""

    name: str
    state: State
    error: str
    tools: tuple[str, ...]


class McpHub:
    """Every configured server of one runtime; `aclose` stops them all."""

    def __init__(self, config: McpConfig, *, reserved: Iterable[str] = ()) -> None:
        self.servers = {name: McpServer(name, server) for name, server in config.servers.items()}
        self.consent: ConsentHook | None = None
        self._reserved = frozenset(reserved)
        self._allowed: set[tuple[str, str]] = set()
        """(server, tool) the user allowed for this thread."""
        self._tools: list[Tool] = []
        self._listed: tuple[int, ...] = ()
        self._closed = False

    def __bool__(self) -> bool:
        return bool(self.servers)

    async def start(self) -> None:
        """Start every server not running yet and wait until each is ready or failed."""
        if self._closed or not self.servers:
            return
        for server in self.servers.values():
            if server.state == "stopped":
                server.start()
        await asyncio.gather(*(s.wait_ready() for s in self.servers.values()))

    def tools(self) -> Sequence[Tool]:
        """The tools of the servers that are ready, named as the model sees them."""
        listed = tuple(id(s.tools) for s in self.servers.values())
        if listed != self._listed:
            self._tools, self._listed = self._build(), listed
        return self._tools

    def _build(self) -> list[Tool]:
        counts: dict[str, int] = {}
        for server in self.servers.values():
            for tool in server.tools:
                counts[tool.name] = counts.get(tool.name, 0) + 1
        out: list[Tool] = []
        for server in self.servers.values():
            for tool in server.tools:
                clash = counts[tool.name] > 1 or tool.name in self._reserved
                shown = f"{server.name}__{tool.name}" if clash else tool.name
                shown = _VALID_NAME.sub("_", shown)[:64]
                schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
                out.append(
                    Tool(
                        shown,
                        tool.description or "",
                        schema or {"type": "object", "properties": {}},
                        self._handler(server, tool.name),
                        server=server.name,
                    )
                )
        return out

    def _handler(
        self, server: McpServer, tool: str
    ) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any] | str]]:
        async def run(args: dict[str, Any]) -> dict[str, Any] | str:
            denied = await self._consent(server, tool, args)
            if denied is not None:
                return denied
            try:
                result = await server.call(tool, args)
            except McpServerError as exc:
                return self._failed(server, exc)
            return result_text(result)

        return run

    async def _consent(self, server: McpServer, tool: str, args: dict[str, Any]) -> str | None:
        """None: run it. Else the result the model gets instead."""
        if tool in server.config.allow or (server.name, tool) in self._allowed:
            return None
        if self.consent is None:
            return error_result("denied", f"{tool} needs the user's consent, and none was given")
        shown = safe_text(json.dumps(args, ensure_ascii=False))
        answer = await self.consent(ConsentRequest(server.name, tool, shown))
        if answer == "thread":
            self._allowed.add((server.name, tool))
        if answer == "deny":
            return error_result(
                "denied", f"the user declined to run {tool}; do not call it again unasked"
            )
        return None

    def _failed(self, server: McpServer, exc: McpServerError) -> str:
        """A dead server is reported once with why; later calls just say it is down."""
        if server.reported:
            return error_result("server_failed", f"MCP server {server.name} is not running")
        server.reported = True
        return error_result("server_failed", f"MCP server {server.name} failed: {exc}")

    def views(self) -> list[ServerView]:
        """The servers as /tools lists them."""
        shown: dict[str, list[str]] = {}
        for tool in self.tools():
            shown.setdefault(tool.server or "", []).append(safe_text(tool.name))
        return [
            ServerView(safe_text(s.name), s.state, s.error, tuple(shown.get(s.name, ())))
            for s in self.servers.values()
        ]

    async def aclose(self) -> None:
        """Stop every server (each closes its own transport); nothing starts after."""
        self._closed = True
        await asyncio.gather(*(s.aclose() for s in self.servers.values()))
