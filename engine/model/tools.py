"""Tools the model may call, and the one rule for running them.

Whatever the model sends as arguments, the turn goes on: malformed JSON, an
unknown tool or a failing handler all become a JSON error result the model
can read, never an exception in the driver.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from msgspec import Struct

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | str]]
"""A tool's body: a JSON-able result, or text that is the result as it is (MCP tools)."""


class Tool(Struct, frozen=True):
    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    server: str | None = None
    """The MCP server the tool comes from (None: Trove's own)."""

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def error_result(code: str, message: str) -> str:
    return json.dumps({"status": "error", "error": code, "message": message}, ensure_ascii=False)


class ToolBox:
    """The tools offered on each request, by name."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools or ():
            self.add(tool)

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def joined(self, more: Iterable[Tool]) -> ToolBox:
        """A new box: these tools, then `more` (one named like a tool here replaces it)."""
        return ToolBox([*self._tools.values(), *more])

    def __bool__(self) -> bool:
        return bool(self._tools)

    def server_of(self, name: str) -> str | None:
        """The MCP server of the tool named `name` (None: Trove's own, or no such tool)."""
        tool = self._tools.get(name)
        return tool.server if tool is not None else None

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self._tools.values()]

    async def call(self, name: str, arguments: str) -> str:
        tool = self._tools.get(name)
        if tool is None:
            return error_result("unknown_tool", f"no tool named {name!r}")
        try:
            args = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return error_result("invalid_arguments", f"arguments are not valid JSON: {exc.msg}")
        if not isinstance(args, dict):
            return error_result("invalid_arguments", "arguments must be a JSON object")
        try:
            result = await tool.handler(args)
        except Exception as exc:  # a tool bug must not end the turn
            return error_result("tool_failed", f"{type(exc).__name__}: {exc}")
        if isinstance(result, str):
            return result
        return json.dumps(result, ensure_ascii=False)
