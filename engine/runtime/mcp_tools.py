"""The MCP servers in an open thread: the driver's extension and the /tools command.

`ToolsExtension` is what the driver is given as its extension when servers are
configured: task continuity's tools, instructions and message pass, plus the
servers' tools. The servers start when the first request is built (never at
launch), in tasks of the hub's own, and the runtime stops them as it closes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.model.tools import Tool
from engine.runtime.commands import CommandRegistry
from engine.runtime.continuity import ThreadContinuity
from engine.surface import Message

if TYPE_CHECKING:
    from engine.mcp import McpHub

TROVE_TOOLS = ("history_search", "history_read", "task_note")
"""Trove's own tool names: an MCP tool named like one is prefixed with its server's name."""


class ToolsExtension:
    """Task continuity (if on) and the MCP servers, as one driver Extension."""

    def __init__(
        self, continuity: ThreadContinuity | None, hub: McpHub, *, offer: bool = True
    ) -> None:
        self.continuity = continuity
        self.hub = hub
        self.offer = offer
        """False for a model without native tool calls (/model switches it)."""

    def tools(self) -> Sequence[Tool]:
        own = self.continuity.tools() if self.continuity is not None else ()
        return [*own, *self.hub.tools()] if self.offer else list(own)

    def instructions(self) -> str:
        return self.continuity.instructions() if self.continuity is not None else ""

    async def amend(self, messages: list[Message]) -> list[Message]:
        if self.offer:
            await self.hub.start()  # the first request starts the servers
        if self.continuity is None:
            return messages
        return await self.continuity.amend(messages)


def tools_listing(hub: McpHub | None) -> str:
    """What /tools says: each server, its state and its tools (all escaped)."""
    if hub is None or not hub:
        return "No MCP servers are configured (mcp.servers in the config file)."
    lines: list[str] = []
    for view in hub.views():
        lines.append(f"{view.name}: {view.state}")
        if view.state == "failed" and view.error:
            lines.extend(f"  {line}" for line in view.error.splitlines()[-12:])
        if view.tools:
            lines.append(f"  {len(view.tools)} tools: " + ", ".join(view.tools))
        elif view.state == "stopped":
            lines.append("  starts with the first message")
    return "\n".join(lines)


def register_tools_command(commands: CommandRegistry, hub: McpHub | None) -> None:
    @commands.add("tools", "list the MCP servers, their state and their tools")
    async def _tools(args: str) -> str:
        return tools_listing(hub)
