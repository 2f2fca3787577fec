"""Builders shared by engine tests: a log in tmp_path, a real client on the scripted server."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from engine.driver import Driver
from engine.events import LogEvent
from engine.log import SessionLog
from engine.model import ModelClient
from engine.tools import Tool, ToolBox
from tests.scripted_server import ScriptedServer

E = TypeVar("E", bound=LogEvent)


def client_for(server: ScriptedServer, **kw: Any) -> ModelClient:
    kw.setdefault("max_retries", 0)
    return ModelClient(base_url=server.base_url, api_key="test-key", model="scripted-model", **kw)


def make_driver(
    tmp_path: Path, server: ScriptedServer, *, tools: ToolBox | None = None, **kw: Any
) -> Driver:
    log = SessionLog.open(tmp_path / "session.jsonl")
    return Driver(log, client_for(server), tools=tools, **kw)


def kinds(events: Sequence[LogEvent], *wanted: type[LogEvent]) -> list[type[LogEvent]]:
    """The types (kinds) of events, filtered to those named (all when none are)."""
    return [type(e) for e in events if not wanted or type(e) in wanted]


def of_kind(events: Sequence[LogEvent], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


def echo_tool() -> Tool:
    async def handler(args: dict[str, Any]) -> dict[str, Any]:
        return {"echo": args.get("text", "")}

    return Tool(
        "echo",
        "Echo the text back.",
        {"type": "object", "properties": {"text": {"type": "string"}}},
        handler,
    )


def chat_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """A request's conversation: without the system message and the hidden data message."""
    return [
        m
        for m in request["messages"]
        if m["role"] != "system" and not str(m.get("content", "")).startswith("[TASK-CONTINUITY")
    ]
