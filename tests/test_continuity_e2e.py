"""Issue 4's end-to-end contract: after a real /compact, the CLI finds and reads the originals."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from msgspec import UNSET

from devtools import scripted_server as s
from engine import events as ev
from engine.config import parse_config
from engine.continuity import ArchiveStore, archive_path
from engine.log import read_events
from engine.runtime import Runtime
from engine.workspace.fork import fork_thread
from engine.workspace.reports import cli_notes, cli_search
from tests.cli_support import Env, trove
from tests.support import client_for, of_kind, opened

CODE = "ZX-4471-QK"
CHINESE = "会议改在北京饭店举行"


def _compact_session(where: Env, server) -> None:
    server.script(
        s.text("Noted."),
        s.text("好的。"),
        s.text("A summary that leaves the exact code and place out."),
    )
    lines = f"The deploy code is {CODE} for tonight.\n请记住：{CHINESE}。\n/compact\n"
    result = trove("--plain", *where.common, stdin=lines)
    assert result.returncode == 0, result.stderr


def test_exact_code_and_chinese_phrase_after_compact(env: Env, server):
    _compact_session(env, server)
    found = trove("history", "search", CODE, "--json", *env.common)
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["status"] == "available" and result["authority"] == "model_report"
    hit = result["results"][0]
    assert CODE in hit["excerpt"] and hit["role"] == "user" and hit["batch"] is not None
    page = json.loads(trove("history", "read", hit["id"], "--json", *env.common).stdout)
    assert page["text"] == f"The deploy code is {CODE} for tonight."
    assert page["authority"] == "model_report"
    assert page["next_offset"] is None and page["truncated"] is False
    chinese = json.loads(trove("history", "search", "北京饭店", "--json", *env.common).stdout)
    assert chinese["status"] == "available"
    read = json.loads(
        trove("history", "read", chinese["results"][0]["id"], "--json", *env.common).stdout
    )
    assert read["text"] == f"请记住：{CHINESE}。"
    # The checkpoint replaced them in the model's view; only the archive holds them.
    logs = list((env.home / "users" / "local" / "threads").glob("*/session.jsonl"))
    events = read_events(logs[0]).events
    end = of_kind(events, ev.CompactEnd)[-1]
    assert isinstance(end.archive["batch"], int) and len(end.archive["scope"]) == 32


def test_search_read_note_turn_then_trove_notes(env: Env, server):
    _compact_session(env, server)
    found = json.loads(trove("history", "search", CODE, "--json", *env.common).stdout)
    source = found["results"][0]["id"]
    server.script(
        s.tool_calls([("history_search", {"query": CODE})]),
        s.tool_calls([("history_read", {"source_id": source})]),
        s.tool_calls(
            [("task_note", {"key": "deploy-code", "content": CODE, "source_ids": [source]})]
        ),
        s.text(f"The code is {CODE}."),
    )
    result = trove("--plain", *env.common, "--thread", _thread(env), stdin="What was the code?\n")
    assert result.returncode == 0, result.stderr
    events = read_events(next((env.home / "users" / "local" / "threads").glob("*/session.jsonl")))
    results = of_kind(events.events, ev.ToolResult)
    assert [r.name for r in results] == ["history_search", "history_read", "task_note"]
    assert all(json.loads(r.content).get("status") != "error" for r in results)
    notes = trove("notes", *env.common)
    assert notes.returncode == 0
    assert f"deploy-code: {CODE}" in notes.stdout
    assert f"cites {source} (available)" in notes.stdout


def _thread(where: Env) -> str:
    return next((where.home / "users" / "local" / "threads").iterdir()).name


def _config(server, **continuity) -> object:
    return parse_config(
        {
            "model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0},
            "compaction": {"keep_recent_tokens": 0},
            "task_continuity": continuity,
        },
        source="test",
        env={},
    )


async def test_disabled_continuity_creates_no_file_and_offers_no_tools(tmp_path: Path, server):
    rt = opened(Runtime.open(_config(server, enabled=False), tmp_path, model=client_for(server)))
    for prompt in ("one", "two"):
        rt.driver.send(prompt)
        await asyncio.wait_for(rt.driver.when_idle(), 5)
    assert (await rt.commands.run("/compact")).ok
    assert not archive_path(rt.thread.dir).exists()
    assert "tools" not in server.requests[0]
    assert of_kind(rt.thread.log.events, ev.CompactEnd)[-1].archive is UNSET
    await rt.aclose()


async def test_storage_failure_keeps_the_summary(tmp_path: Path, server):
    rt = opened(Runtime.open(_config(server), tmp_path, model=client_for(server)))
    for prompt in ("one", "two"):
        rt.driver.send(prompt)
        await asyncio.wait_for(rt.driver.when_idle(), 5)
    (rt.thread.dir / "task-history").write_text("not a directory")  # unwritable archive
    result = await rt.commands.run("/compact")
    assert result.ok and "could not store the originals" in result.text
    end = of_kind(rt.thread.log.events, ev.CompactEnd)[-1]
    assert end.error is None and end.archive["status"] == "unavailable"
    assert rt.driver.surface.entries[0].checkpoint
    await rt.aclose()


async def test_fork_copies_messages_and_notes_but_not_the_archive(tmp_path: Path, server):
    rt = opened(Runtime.open(_config(server), tmp_path, model=client_for(server)))
    for prompt in (f"code {CODE}", "two"):
        rt.driver.send(prompt)
        await asyncio.wait_for(rt.driver.when_idle(), 5)
    assert (await rt.commands.run("/compact")).ok
    store = ArchiveStore(archive_path(rt.thread.dir), rt.config.task_continuity, readonly=True)
    source = store.sources(1)[0].source_id
    store.close()
    from engine.continuity.notes.note import write_note

    write_note(rt.thread.log.append, "code", CODE, [source])
    parent = rt.thread.id
    messages = rt.driver.surface.messages()
    await rt.aclose()
    child = fork_thread(tmp_path, "local", parent)
    child_dir = tmp_path / "users" / "local" / "threads" / child
    assert not (child_dir / "task-history").exists()
    forked = opened(
        Runtime.open(_config(server), tmp_path, thread_id=child, model=client_for(server))
    )
    assert forked.driver.surface.messages() == messages
    report = cli_notes(tmp_path, "local", child)
    assert report["notes"][0]["content"] == CODE
    assert report["notes"][0]["citations"][0]["status"] == "unavailable"
    assert cli_notes(tmp_path, "local", parent)["notes"][0]["citations"][0]["status"] == (
        "available"
    )
    await forked.aclose()


async def test_a_failed_capture_is_archived_after_the_next_successful_one(tmp_path: Path, server):
    """The archive works again mid-session: the earlier compaction's originals
    are captured then, recorded as `compact/archived`, not only on the next open."""
    rt = Runtime.open(_config(server), tmp_path, model=client_for(server))
    try:
        rt.driver.send(f"The first code is {CODE}.")
        await asyncio.wait_for(rt.driver.when_idle(), 5)
        blocker = rt.thread.dir / "task-history"
        blocker.write_text("not a directory")  # unwritable archive
        assert (await rt.commands.run("/compact")).ok
        failed = of_kind(rt.thread.log.events, ev.CompactEnd)[-1]
        assert failed.archive["status"] == "unavailable"
        blocker.unlink()  # the disk is fixed
        rt.driver.send("second prompt")
        await asyncio.wait_for(rt.driver.when_idle(), 5)
        assert (await rt.commands.run("/compact")).ok
        [archived] = of_kind(rt.thread.log.events, ev.CompactArchived)
        assert archived.start == failed.start and archived.recovered is True
        assert isinstance(archived.archive["batch"], int)
        thread_id = rt.thread.id
    finally:
        await rt.aclose()
    found = cli_search(tmp_path, "local", thread_id, CODE)
    assert found["status"] == "available" and found["results"][0]["origin"] == "archive"
