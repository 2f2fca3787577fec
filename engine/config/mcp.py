"""The `mcp:` section: the MCP servers whose tools the model is offered.

A server is either a command Trove starts and talks to over stdio (`command`,
`args`, `env`) or a streamable HTTP endpoint (`url`, `headers`). `allow` names
the tools that run without asking; every other tool asks first. ${VAR} works in
every string, `env` and `headers` included (engine.config.schema).
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from msgspec import Meta, Struct, field

from engine.config.errors import ConfigError


def _http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


_STRINGS = {"expected": "a list of strings"}
_TABLE = {"expected": "a mapping of names to strings"}


class McpServerConfig(Struct, frozen=True):
    """One server under `mcp.servers`, named by its key."""

    command: (
        Annotated[str, Meta(description="program to start (stdio), e.g. uvx", min_length=1)] | None
    ) = None
    args: Annotated[
        tuple[str, ...], Meta(description="its arguments, e.g. [mcp-server-time]", extra=_STRINGS)
    ] = ()
    env: Annotated[
        dict[str, str], Meta(description="environment variables it gets", extra=_TABLE)
    ] = field(default_factory=dict)
    url: (
        Annotated[
            str,
            Meta(
                description="streamable HTTP endpoint instead of a command",
                extra={"expected": "an http:// or https:// URL", "check": _http_url},
            ),
        ]
        | None
    ) = None
    headers: Annotated[
        dict[str, str],
        Meta(description="HTTP headers, e.g. Authorization: Bearer ${TOKEN}", extra=_TABLE),
    ] = field(default_factory=dict)
    allow: Annotated[
        tuple[str, ...], Meta(description="tools that run without asking", extra=_STRINGS)
    ] = ()


class McpConfig(Struct, frozen=True):
    """MCP servers, started on the first message and stopped with Trove."""

    servers: Annotated[
        dict[str, McpServerConfig],
        Meta(
            description="MCP servers whose tools the model may call; see the example below",
            extra={"expected": "a mapping of names to servers"},
        ),
    ] = field(default_factory=dict)


def check_servers(config: McpConfig, source: str) -> None:
    """Each server is a command or a url, not both and not neither (one-line errors)."""
    for name, server in config.servers.items():
        path = f"{source}: mcp.servers.{name}"
        if server.command is None and server.url is None:
            raise ConfigError(f"{path}: needs a command (stdio) or a url (streamable HTTP)")
        if server.command is not None and server.url is not None:
            raise ConfigError(f"{path}: has both command and url; give one")
        if server.url is not None and (server.args or server.env):
            raise ConfigError(f"{path}: args and env are for a command, not a url")
        if server.command is not None and server.headers:
            raise ConfigError(f"{path}: headers are for a url, not a command")
