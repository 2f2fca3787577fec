"""Tools from MCP servers (engine.config.mcp), offered to the model with consent.

Light to import: the `mcp` SDK is imported only when a server starts.
"""

from engine.mcp.hub import Answer, ConsentHook, ConsentRequest, McpHub, ServerView

__all__ = ["Answer", "ConsentHook", "ConsentRequest", "McpHub", "ServerView"]
