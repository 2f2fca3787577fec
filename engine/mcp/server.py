"""One configured MCP server: its connection, its state and its tools.

The connection (the SDK's transport and `ClientSession`, both task-group
context managers) lives in one task of its own that holds an AsyncExitStack
from start to stop, so it never runs on a turn's task and a cancelled turn
cannot tear it down half way. Calls are made from the turn's task through the
open session. A stdio server runs under guard.py so that it dies with Trove;
its stderr goes to a private temporary file, never to the terminal, and its
tail is what /tools shows of a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from engine.config.mcp import McpServerConfig
from engine.util.safe_text import safe_text

if TYPE_CHECKING:
    from mcp import ClientSession

State = Literal["stopped", "starting", "ready", "failed"]
STDERR_TAIL = 2000
"""Characters of a failed server's stderr that /tools shows."""
START_TIMEOUT = 60.0
"""Seconds a server has to start and list its tools before it counts as failed."""
GUARD = Path(__file__).with_name("guard.py")


class McpServerError(Exception):
    """The server is not there to call (it failed, or died mid-call)."""


class McpServer:
    """A server from `mcp.servers`, started by `start` and stopped by `aclose`."""

    def __init__(self, name: str, config: McpServerConfig) -> None:
        self.name = name
        self.config = config
        self.state: State = "stopped"
        self.error = ""
        self.tools: list[Any] = []
        """The server's `mcp.types.Tool`s, as it listed them."""
        self.reported = False
        """Its last failure was told to the model once already."""
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._stderr: Any = None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Begin connecting (in a task of its own) unless it is starting or ready."""
        if self._task is not None and not self._task.done():
            return
        self.state, self.error, self.reported = "starting", "", False
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"mcp server {self.name}"
        )

    async def wait_ready(self) -> None:
        """Until it is ready or has failed (never raises; read `state`)."""
        await self._ready.wait()

    async def _run(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                async with asyncio.timeout(START_TIMEOUT):  # in this task: the SDK's groups
                    session = await self._connect(stack)
                self._session = session
                self.state = "ready"
                self._ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            self._fail("stopped")
            raise
        except BaseException as exc:  # noqa: BLE001 - any failure is the server's state
            self._fail(_describe(exc))
        else:
            if self.state == "ready":
                self.state = "stopped"
        finally:
            self._session = None
            self._ready.set()

    async def _connect(self, stack: AsyncExitStack) -> ClientSession:
        from mcp import ClientSession

        if self.config.url is not None:
            from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

            client = await stack.enter_async_context(
                create_mcp_http_client(headers=dict(self.config.headers))
            )
            streams = streamable_http_client(self.config.url, http_client=client)
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            if self._stderr is not None:
                self._stderr.close()
            # Kept open after the server stops: its tail says why it failed.
            self._stderr = _stderr_file()
            command = self.config.command or ""
            params = StdioServerParameters(
                command=sys.executable,
                args=["-I", "-S", str(GUARD), str(os.getpid()), command, *self.config.args],
                env=dict(self.config.env) or None,
            )
            streams = stdio_client(params, errlog=self._stderr)
        read, write = await stack.enter_async_context(streams)
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            from mcp import types

            params_ = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            listed = await session.list_tools(params=params_)
            tools.extend(listed.tools)
            cursor = listed.next_cursor
            if not cursor:
                break
        self.tools = tools
        return session

    def _fail(self, error: str) -> None:
        self.state = "failed"
        tail = self.stderr_tail()
        self.error = safe_text(error + (f"\nstderr: {tail}" if tail else ""))

    def stderr_tail(self) -> str:
        """The end of what the server wrote to stderr, made safe for a terminal."""
        file = self._stderr
        if file is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            size = os.fstat(file.fileno()).st_size
            data = os.pread(file.fileno(), STDERR_TAIL, max(0, size - STDERR_TAIL))
            return safe_text(data.decode("utf-8", "replace").strip())
        return ""

    async def aclose(self) -> None:
        """Stop it: the SDK closes its stdin, then ends its process group."""
        task = self._task
        if task is None:
            return
        self._stop.set()
        if not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 10)
            except (TimeoutError, Exception):  # noqa: BLE001 - closing regardless
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self.state == "ready":
            self.state = "stopped"

    # -- calls -----------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The tool's `CallToolResult`; McpServerError when the server is not there or
        dies during the call (it is then stopped, and starts again on the next call)."""
        if self.state != "ready":
            self.start()
            await self.wait_ready()
        session = self._session
        if session is None or self.state != "ready":
            raise McpServerError(self.error or f"{self.name} is not running")
        from mcp.shared.exceptions import MCPError

        try:
            return await session.call_tool(tool, arguments)
        except MCPError as exc:
            if "closed" not in str(exc).lower():
                raise
            await self._died(str(exc))
            raise McpServerError(self.error) from None
        except (OSError, EOFError) as exc:
            await self._died(_describe(exc))
            raise McpServerError(self.error) from None

    async def _died(self, why: str) -> None:
        await self.aclose()
        self._fail(f"the server stopped during the call ({why})")


def _stderr_file() -> Any:
    import tempfile

    return tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")


def _describe(exc: BaseException) -> str:
    """One line for a failure, however the SDK wrapped it (exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, asyncio.TimeoutError):
        return f"did not start within {START_TIMEOUT:g} seconds"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if str(exc) else text
