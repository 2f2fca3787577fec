"""A runtime assembled with its continuity deferred (the TUI's launch) behaves as one wired
at once: the first request or compaction wires it, whichever comes first."""

from __future__ import annotations

import asyncio
from pathlib import Path

from devtools import scripted_server as s
from engine import events as ev
from engine.config import parse_config
from engine.continuity import AUTHORITY_CONTRACT
from engine.runtime import Runtime, open_thread
from tests.support import client_for, of_kind, opened


def _config(server):
    return parse_config(
        {
            "model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0},
            "compaction": {"keep_recent_tokens": 0},
        },
        source="test",
        env={},
    )


def _deferred(server, home: Path, *, closed_by_the_test: bool = False) -> Runtime:
    config = _config(server)
    thread = open_thread(config, home, None)
    runtime = Runtime.assemble(
        config, home, thread, model=client_for(server), defer_continuity=True
    )
    return runtime if closed_by_the_test else opened(runtime)


async def test_the_first_request_wires_the_tools_and_contract(tmp_path: Path, server) -> None:
    runtime = _deferred(server, tmp_path)
    assert runtime._continuity is not None and not runtime._continuity.built  # not yet
    server.script(s.text("hello"))
    runtime.driver.send("hi")
    await asyncio.wait_for(runtime.driver.when_idle(), 10)
    request = server.requests[0]
    assert {t["function"]["name"] for t in request["tools"]} == {
        "history_search",
        "history_read",
        "task_note",
    }
    assert AUTHORITY_CONTRACT in request["messages"][0]["content"]
    assert runtime._continuity.built


async def test_a_compaction_before_any_request_is_captured(tmp_path: Path, server) -> None:
    runtime = _deferred(server, tmp_path)
    runtime.thread.log.append(ev.UserMessage(text="remember QX-1"))
    runtime.thread.log.append(ev.AssistantMessage(content="noted"))
    server.script(s.text("the summary"))
    await runtime.compaction.compact_now(runtime.driver)
    ends = of_kind(runtime.thread.log.events, ev.CompactEnd)
    assert ends and isinstance(ends[-1].archive, dict) and "batch" in ends[-1].archive
    continuity = runtime.continuity
    assert continuity is not None and continuity.store is not None


async def test_reading_continuity_wires_it(tmp_path: Path, server) -> None:
    runtime = _deferred(server, tmp_path)
    assert runtime.continuity is not None
    assert runtime._continuity is not None and runtime._continuity.built
    assert runtime.driver.offered_tools().names() == ["history_search", "history_read", "task_note"]


async def test_a_runtime_closed_before_it_wired_continuity_never_wires_it(
    tmp_path: Path, server
) -> None:
    # The app completes it on a timer after its first frame; the thread may be gone by then.
    runtime = _deferred(server, tmp_path, closed_by_the_test=True)
    await runtime.aclose()
    runtime.complete()
    assert runtime.continuity is None and runtime.driver.offered_tools().names() == []


async def test_tools_given_before_the_wiring_completes_are_kept(tmp_path: Path, server) -> None:
    # The snapshot of a steer after a tool call gave the driver an echo tool right after
    # launch; the deferred wiring then replaced the toolbox and the call came back
    # "unknown_tool". The three history tools join what the driver offers instead.
    from tests.support import echo_tool

    runtime = _deferred(server, tmp_path)
    runtime.driver.tools.add(echo_tool())
    server.script(s.tool_calls([("echo", {"text": "x"})]), s.text("done"))
    runtime.driver.send("hi")
    await asyncio.wait_for(runtime.driver.when_idle(), 10)
    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert offered == {"echo", "history_search", "history_read", "task_note"}
    (result,) = of_kind(runtime.thread.log.events, ev.ToolResult)
    assert "unknown_tool" not in result.content


def test_resuming_a_thread_never_compacted_imports_no_continuity(tmp_path: Path) -> None:
    # The recovery check runs before the thread opens; with no archive reference in the
    # log there is nothing to recover, so the continuity package stays unimported.
    import subprocess
    import sys

    from engine.log import SessionLog
    from engine.threads.paths import LOG_NAME, thread_dir

    log = SessionLog.open(thread_dir(tmp_path, "local", "plain") / LOG_NAME)
    log.append(ev.UserMessage(text="hello"))
    log.append(ev.AssistantMessage(content="hi"))
    log.close()
    code = (
        "import sys; from pathlib import Path; from engine.config import parse_config;"
        "from engine.runtime import open_thread;"
        "config = parse_config({}, source='test', env={});"
        f"thread = open_thread(config, Path({str(tmp_path)!r}), 'plain');"
        "assert len(thread.log.events) == 3, thread.log.events;"  # the resume's end-seed
        "print(sorted(m for m in sys.modules if m.startswith('engine.continuity')))"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_deferred_assembly_imports_no_continuity_until_it_completes(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import asyncio, sys; from pathlib import Path; from engine.config import parse_config;"
        "from engine.model import ModelClient; from engine.runtime import Runtime, open_thread\n"
        "def loaded(): return any(m.startswith('engine.continuity') for m in sys.modules)\n"
        "async def main():\n"
        "    config = parse_config({}, source='test', env={})\n"
        f"    home = Path({str(tmp_path)!r})\n"
        "    client = ModelClient(base_url='http://127.0.0.1:9/v1', api_key='k', model='m')\n"
        "    runtime = Runtime.assemble(config, home, open_thread(config, home, None),"
        " model=client, defer_continuity=True)\n"
        "    before = loaded(); runtime.complete(); after = loaded()\n"
        "    await runtime.aclose(); print(before, after)\n"
        "asyncio.run(main())"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "True"], out.stdout + out.stderr
