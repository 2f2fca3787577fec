"""Builders shared by engine tests: a log in tmp_path, a real client on the scripted server."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from devtools.scripted_server import ScriptedServer
from engine.driver import Driver
from engine.events import LogEvent
from engine.log import SessionLog
from engine.model import ModelClient
from engine.model.tools import Tool, ToolBox

LIMIT = 10.0
"""Seconds a test waits for a state before it fails (a bound, never a delay)."""

_Opened = TypeVar("_Opened")
_to_close: list[Callable[[], Awaitable[None]]] = []


def close_at_teardown(closer: Callable[[], Awaitable[None]]) -> None:
    """Run `closer` when the test ends, passed or failed (tests/conftest.py drains these):
    a failing assert must not leak an open log, lock or connection into the next test."""
    _to_close.append(closer)


async def close_all_opened() -> None:
    """Close what the test opened, newest first; closing twice is harmless."""
    while _to_close:
        await _to_close.pop()()


def opened(thing: _Opened) -> _Opened:
    """`thing` (a Runtime, Driver or ModelClient), closed at teardown."""
    if isinstance(thing, Driver):
        driver = thing

        async def close_driver() -> None:
            await driver.aclose()
            await driver.model.aclose()
            driver.log.close()

        close_at_teardown(close_driver)
    else:
        close_at_teardown(thing.aclose)  # type: ignore[attr-defined]
    return thing


async def first_delta(driver: Driver) -> None:
    """Resolve once the running reply has streamed text: told by the driver, not polled."""
    arrived = asyncio.Event()

    class Watch:
        def on_delta(self, turn: int, text: str) -> None:
            arrived.set()

        def on_state(self) -> None:
            pass

        def on_failure(self, text: str) -> None:
            pass

    watch = Watch()
    driver.observers.append(watch)
    try:
        if not driver.partial_reply:
            await asyncio.wait_for(arrived.wait(), LIMIT)
    finally:
        driver.observers.remove(watch)


E = TypeVar("E", bound=LogEvent)


def client_for(server: ScriptedServer, **kw: Any) -> ModelClient:
    kw.setdefault("max_retries", 0)
    return ModelClient(base_url=server.base_url, api_key="test-key", model="scripted-model", **kw)


def make_driver(
    tmp_path: Path, server: ScriptedServer, *, tools: ToolBox | None = None, **kw: Any
) -> Driver:
    log = SessionLog.open(tmp_path / "session.jsonl")
    return opened(Driver(log, client_for(server), tools=tools, **kw))


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


async def killed_child(module: str, home: Path, config: Path, thread_id: str, step: str) -> None:
    """Run `python -m module HOME CONFIG THREAD STEP`, a child that SIGKILLs itself at
    `step`, with no OPENAI_* settings leaking in, and check it really died by the kill."""
    root = Path(__file__).resolve().parent.parent
    env = {key: v for key, v in os.environ.items() if not key.startswith("OPENAI_")}
    env["PYTHONPATH"] = str(root)
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        str(home),
        str(config),
        thread_id,
        step,
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(child.communicate(), 30)
    assert child.returncode == -signal.SIGKILL, err.decode()
