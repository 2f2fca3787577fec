"""Seed 003's compaction rules: one transaction, one durable bracket, exact failures."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from devtools import scripted_server as s
from engine import events as ev
from engine.compaction import CompactionError, InvalidRangeError, Region, run_region
from engine.compaction import selection as selection_module
from engine.compaction.selection import select_range, span_problem
from engine.config import TaskContinuityConfig, parse_config
from engine.continuity import capture as capture_module
from engine.continuity.archive.store import ArchiveStore
from engine.continuity.context import ContinuityContext
from engine.log import SessionLog, read_events
from engine.model import Completion
from engine.model.tools import ToolBox
from engine.runtime import Runtime
from engine.surface import Surface
from engine.threads.thread import Thread
from tests.support import chat_messages, client_for, echo_tool, kinds, of_kind, opened


def config(server, **compaction: Any):
    compaction.setdefault("keep_recent_tokens", 0)
    return parse_config(
        {
            "model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0},
            "compaction": compaction,
        },
        source="test",
        env={},
    )


class FaultyLog(SessionLog):
    """A log whose disk fills up part-way through the lines of chosen kinds
    (half the line reaches the file, then ENOSPC), and that records each fsync."""

    fail_kinds: set[type[ev.Event]]
    fail_flush = False

    cut_short = False

    def _raw_write(self, fd: int, data: bytes) -> int:
        if self.cut_short:  # the rest of the line: the disk is full now
            self.cut_short = False
            raise OSError(28, "No space left on device")
        if ev.KINDS.get(orjson.loads(data)["kind"]) in self.fail_kinds:
            self.cut_short = True
            return os.write(fd, data[: len(data) // 2])
        return os.write(fd, data)

    def flush(self) -> None:
        self.flushes.append(len(self.events))
        if self.fail_flush:
            raise OSError(5, "Input/output error")
        super().flush()


def open_runtime(
    tmp_path: Path,
    server,
    *,
    faulty: bool = True,
    thread_id: str | None = None,
    **compaction: Any,
) -> Runtime:
    cfg = config(server, **compaction)
    runtime = opened(Runtime.open(cfg, tmp_path, thread_id=thread_id, model=client_for(server)))
    if faulty:
        log = runtime.thread.log
        log.__class__ = FaultyLog
        log.fail_kinds = set()  # type: ignore[attr-defined]
        log.flushes = []  # type: ignore[attr-defined]
    return runtime


async def chat(runtime: Runtime, *prompts: str) -> None:
    for prompt in prompts:
        runtime.driver.send(prompt)
        await asyncio.wait_for(runtime.driver.when_idle(), 5)


def bracket(events: list[dict]) -> list[str]:
    return kinds(events, ev.CompactStart, ev.CompactSummary, ev.CompactEnd)


async def test_manual_compaction_replaces_old_turns_with_a_checkpoint(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two", "three")
    server.script(s.text("<summary>They said one, two, three.</summary>", usage={"x": 1}))
    outcome = await rt.compaction.compact_now(rt.driver)
    assert outcome is not None and outcome.replaced == 6
    events = rt.thread.log.events
    start, summary, end = (of_kind(events, kind)[-1] for kind in bracket(events))
    assert start.turn is None and start.stability == "span"
    assert end.error is None and end.start == start.seq
    checkpoint = of_kind(events, ev.UserMessage)[-1]
    assert checkpoint.checkpoint is not None and checkpoint.checkpoint.summary == summary.seq
    assert summary.summary == "They said one, two, three."
    assert summary.raw == "<summary>They said one, two, three.</summary>"
    assert summary.usage == ev.Usage()  # in memory: the counters (none were sent)
    on_disk = [orjson.loads(line) for line in rt.thread.log.path.read_bytes().splitlines()]
    assert on_disk[summary.seq - 1]["usage"] == {"x": 1}  # the line: exactly as sent
    assert summary.model == "scripted-model"
    originals = [e.seq for e in events if isinstance(e, (ev.UserMessage, ev.AssistantMessage))]
    assert summary.replaced == originals[:6]
    assert rt.thread.log.flushes == [end.seq]  # flushed once, right after the close
    await chat(rt, "four")
    request = server.requests[-1]["messages"]
    assert request[0]["role"] == "system"
    chat_part = chat_messages(server.requests[-1])
    assert chat_part[0]["content"].startswith("[Checkpoint")
    assert [m["content"] for m in chat_part[1:]] == ["four"]
    assert "one" not in [m["content"] for m in request]
    # The summary request carried the old turns and no tools.
    summary_request = server.requests[3]
    assert "one" in summary_request["messages"][1]["content"]
    assert "tools" not in summary_request
    await rt.aclose()


async def test_manual_keeps_recent_context_and_never_splits_tool_calls(tmp_path, server):
    """The recent-context budget ends between a tool call and its result: the cut moves
    back, so the call, its result and the reply after them stay on the surface together."""
    rt = open_runtime(tmp_path, server)
    rt.driver.tools = ToolBox([echo_tool()])
    server.script(s.text("echo: one"), s.tool_calls([("echo", {"text": "x"})]), s.text("done"))
    await chat(rt, "one", "two")
    entries = rt.driver.surface.entries
    assert [(e.role, bool(e.call_ids), e.result_of) for e in entries[3:]] == [
        ("assistant", True, None),
        ("tool", False, entries[3].call_ids[0]),
        ("assistant", False, None),
    ]
    budget = entries[4].tokens + entries[5].tokens  # keeps the result, not its call
    thread_id = rt.thread.id
    await rt.aclose()
    rt = open_runtime(tmp_path, server, thread_id=thread_id, keep_recent_tokens=budget)
    server.script(s.text("summary"))
    outcome = await rt.compaction.compact_now(rt.driver)
    assert outcome is not None and outcome.replaced == 3  # "one", its reply, "two"
    kept = rt.driver.surface.entries[1:]
    assert [e.role for e in kept] == ["assistant", "tool", "assistant"]
    assert kept[1].result_of == kept[0].call_ids[0] and kept[2].message["content"] == "done"
    assert sum(e.tokens for e in kept) >= budget
    await rt.aclose()


async def test_nothing_to_compact_writes_nothing(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    before = len(rt.thread.log.events)
    assert await rt.compaction.compact_now(rt.driver) is None
    assert len(rt.thread.log.events) == before
    result = await rt.commands.run("/compact")
    assert result.ok and result.text.startswith("Nothing to compact")
    await rt.aclose()


async def test_seed_scenario_queued_prompt_and_injection(tmp_path, server):
    """A held summary admits a queued prompt and an immediate injection."""
    rt = open_runtime(tmp_path, server)
    await chat(rt, "first", "second")
    server.script(s.text("the summary", hold="before"))
    task = asyncio.ensure_future(rt.commands.run("/compact"))
    await server.wait_requests(3)
    queued = rt.driver.send("queued prompt")
    injected = rt.driver.inject("injected context")
    assert ev.TurnStart not in kinds(rt.thread.log.events[-3:])
    server.release()
    result = await task
    assert result.ok, result.text
    await asyncio.wait_for(rt.driver.when_idle(), 5)
    events = rt.thread.log.events
    end = of_kind(events, ev.CompactEnd)[-1]
    turn_start = of_kind(events, ev.TurnStart)[-1]
    assert of_kind(events, ev.CompactStart)[-1].turn is None
    assert end.seq < turn_start.seq and turn_start.items == (queued,)
    assert rt.thread.log.flushes and rt.thread.log.flushes[0] < turn_start.seq
    # Derived order: checkpoint → injection → queued prompt (and its reply).
    contents = [m["content"] for m in chat_messages(server.requests[-1])]
    assert contents[0].startswith("[Checkpoint")
    assert contents[1:] == ["injected context", "queued prompt"]
    assert injected < end.seq
    # The command lifecycle is log-only: no turn number, not in model history.
    assert kinds(events, ev.CommandRun, ev.CommandDone) == [ev.CommandRun, ev.CommandDone]
    assert turn_start.turn == 3
    await rt.aclose()


async def test_live_orphan_blocks_every_entry_point(tmp_path, server):
    rt = open_runtime(tmp_path, server, auto=True, threshold=0.0001)
    await chat(rt, "one")  # pressure compaction runs inside this turn
    rt.thread.log.append(ev.CompactStart(turn=None, seqs=[], tokens=0))  # a crash
    with pytest.raises(CompactionError) as manual:
        await rt.compaction.compact_now(rt.driver)
    assert manual.value.kind == "busy"
    entries = rt.driver.surface.entries
    with pytest.raises(CompactionError) as explicit:
        await rt.compaction.compact_range(rt.driver, entries[0].seq, entries[-1].seq)
    assert explicit.value.kind == "busy"
    ends = len(of_kind(rt.thread.log.events, ev.CompactEnd))
    await chat(rt, "two")  # pressure is blocked too, and the turn still answers
    assert len(of_kind(rt.thread.log.events, ev.CompactEnd)) == ends
    assert of_kind(rt.thread.log.events, ev.TurnEnd)[-1].status == "ok"
    await rt.aclose()


async def test_stale_orphan_is_ignored_after_an_end_seed(tmp_path, server):
    rt = open_runtime(tmp_path, server, faulty=False)
    await chat(rt, "one", "two")
    rt.thread.log.append(ev.CompactStart(turn=None, seqs=[], tokens=0))
    thread_id = rt.thread.id
    await rt.aclose()
    thread = Thread.resume(tmp_path, "local", thread_id)
    assert thread.log.tail.open_compact is None
    assert thread.log.tail.stale_compacts
    thread.close()
    rt2 = Runtime.open(config(server), tmp_path, thread_id=thread_id, model=client_for(server))
    server.script(s.text("summary"))
    outcome = await rt2.compaction.compact_now(rt2.driver)
    assert outcome is not None
    await rt2.aclose()


async def test_end_seed_replay_clears_an_open_trace(tmp_path):
    log = SessionLog.open(tmp_path / "session.jsonl")
    log.append(ev.CompactStart(turn=None, seqs=[], tokens=0))
    assert log.tail.open_compact is not None
    log.append(ev.EndSeed(previous=1))
    log.append(ev.CompactStart(turn=None, seqs=[], tokens=0))
    log.close()
    replayed = SessionLog.open(tmp_path / "session.jsonl")
    assert replayed.tail.open_compact.seq == 3  # live: after the newest end-seed
    assert [e.seq for e in replayed.tail.stale_compacts] == [1]
    replayed.close()


async def test_pressure_compaction_is_owned_by_the_open_turn(tmp_path, server):
    rt = open_runtime(tmp_path, server, auto=True, threshold=0.0001)
    await chat(rt, "one")
    await chat(rt, "two")
    starts = of_kind(rt.thread.log.events, ev.CompactStart)
    assert starts and starts[-1].turn == 2 and starts[-1].stability == "surface"
    assert not rt.thread.log.flushes  # automatic compaction asks for no flush
    assert of_kind(rt.thread.log.events, ev.CompactEnd)[-1].error is None
    await rt.aclose()


async def test_overflow_compacts_then_retries_once(tmp_path, server):
    rt = open_runtime(tmp_path, server, auto=False)
    await chat(rt, "one")
    server.script(s.overflow(), s.text("summary of one"), s.text("answer after retry"))
    await chat(rt, "two")
    events = rt.thread.log.events
    assert bracket(events) == [ev.CompactStart, ev.CompactSummary, ev.CompactEnd]
    assert of_kind(events, ev.CompactStart)[0].turn == 2
    assert of_kind(events, ev.AssistantMessage)[-1].content == "answer after retry"
    assert chat_messages(server.requests[-1])[0]["content"].startswith("[Checkpoint")
    await rt.aclose()


@pytest.mark.parametrize("how", ["overflow", "pressure"])
async def test_automatic_compaction_keeps_the_question_being_answered(tmp_path, server, how):
    """keep_recent_tokens 0, three prompts, the third overflowing (or under pressure):
    the retried request still ends with the third prompt, and the summary never saw it."""
    auto = how == "pressure"
    rt = open_runtime(tmp_path, server, auto=auto, threshold=0.0001 if auto else 0.8)
    rt.compaction.config = config(server, auto=False).compaction
    await chat(rt, "one", "two")
    rt.compaction.config = config(server, auto=auto, threshold=0.0001).compaction
    first = [s.overflow()] if how == "overflow" else []
    server.script(*first, s.text("summary of one and two"), s.text("answer to three"))
    await chat(rt, "three")
    events = rt.thread.log.events
    start = of_kind(events, ev.CompactStart)[-1]
    three = next(e for e in events if isinstance(e, ev.UserMessage) and e.text == "three")
    replaced = of_kind(events, ev.CompactSummary)[-1].replaced or []
    assert three.seq not in replaced and not start.open_turn
    summary_request = server.requests[-2]["messages"]
    assert "three" not in str(summary_request)
    retried = chat_messages(server.requests[-1])
    assert retried[0]["content"].startswith("[Checkpoint")
    assert retried[-1] == {"role": "user", "content": "three"}
    assert of_kind(events, ev.AssistantMessage)[-1].content == "answer to three"
    await rt.aclose()


async def test_a_prompt_that_alone_overflows_is_summarized_and_the_log_says_so(tmp_path, server):
    rt = open_runtime(tmp_path, server, auto=False)
    rt.compaction.context_window = 50
    server.script(s.overflow(), s.text("summary of the long prompt"), s.text("answer"))
    await chat(rt, "word " * 400)
    start = of_kind(rt.thread.log.events, ev.CompactStart)[-1]
    assert start.open_turn is True
    assert of_kind(rt.thread.log.events, ev.TurnEnd)[-1].status == "ok"
    await rt.aclose()


async def test_overflow_twice_fails_the_turn_with_one_line(tmp_path, server):
    rt = open_runtime(tmp_path, server, auto=False)
    await chat(rt, "one")
    server.script(s.overflow(), s.text("summary"), s.overflow())
    await chat(rt, "two")
    end = of_kind(rt.thread.log.events, ev.TurnEnd)[-1]
    assert end.status == "error" and "\n" not in end.error
    await rt.aclose()


async def test_manual_and_automatic_exclude_each_other(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    server.script(s.text("held summary", hold="before"))
    manual = asyncio.ensure_future(rt.compaction.compact_now(rt.driver))
    await server.wait_requests(3)
    entries = rt.driver.surface.entries
    with pytest.raises(CompactionError) as other:
        await rt.compaction.compact_range(rt.driver, entries[0].seq, entries[-1].seq)
    assert other.value.kind == "busy"
    server.release()
    assert await manual is not None
    # And the other way round: an automatic compaction inside a turn.
    rt.compaction.config = config(server, auto=True, threshold=0.0001).compaction
    server.script(s.text("held auto summary", hold="before"))
    rt.driver.send("three")
    await server.wait_requests(4)
    with pytest.raises(CompactionError) as blocked:
        await rt.compaction.compact_now(rt.driver)
    assert blocked.value.kind == "busy"
    server.release()
    await asyncio.wait_for(rt.driver.when_idle(), 5)
    await rt.aclose()


async def test_reentrant_listeners_see_the_lock(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    seen: list[Any] = []

    def listener(event: dict) -> None:
        if isinstance(event, ev.CompactStart):
            seen.append(("start-open", rt.thread.log.tail.open_compact is not None))
            rt.driver.inject("context from a listener")  # appending re-entrantly is fine
            entries = rt.driver.surface.entries
            nested = rt.compaction.compact_range(rt.driver, entries[0].seq, entries[-1].seq)
            seen.append(asyncio.ensure_future(nested))
        elif isinstance(event, ev.CompactEnd):
            seen.append(("end-free", rt.thread.log.tail.open_compact is None))

    rt.thread.log.listeners.append(listener)
    server.script(s.text("summary"))
    outcome = await rt.compaction.compact_now(rt.driver)
    assert outcome is not None
    with pytest.raises(CompactionError) as busy:
        await seen[1]
    assert busy.value.kind == "busy" and "has not ended" in str(busy.value)
    assert seen[0] == ("start-open", True) and seen[2] == ("end-free", True)
    contents = [m["content"] for m in rt.driver.surface.messages()]
    assert contents[0].startswith("[Checkpoint") and contents[1] == "context from a listener"
    await rt.aclose()


async def test_selected_span_drift_is_changed(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    server.script(s.text("summary", hold="before"))
    task = asyncio.ensure_future(rt.compaction.compact_now(rt.driver))
    await server.wait_requests(3)
    # A writer that ignores the lock replaces part of the selected span.
    first = rt.driver.surface.entries[0].seq
    log = rt.thread.log
    summary = log.append(ev.CompactSummary(replaced=[first], summary="x"))
    log.append(ev.UserMessage(text="rogue", checkpoint={"summary": summary.seq}))
    server.release()
    with pytest.raises(CompactionError) as changed:
        await task
    assert changed.value.kind == "changed"
    assert "conversation is unchanged" in str(changed.value)
    end = of_kind(log.events, ev.CompactEnd)[-1]
    assert end.error == "changed"
    assert log.flushes == [end.seq]  # a closed failed manual attempt is flushed too
    await rt.aclose()


async def test_whole_surface_change_stops_an_explicit_range(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    entries = list(rt.driver.surface.entries)
    server.script(s.text("summary", hold="before"))
    task = asyncio.ensure_future(
        rt.compaction.compact_range(rt.driver, entries[0].seq, entries[1].seq)
    )
    await server.wait_requests(3)
    rt.driver.inject("anything appended")
    server.release()
    with pytest.raises(CompactionError) as changed:
        await task
    assert changed.value.kind == "changed"
    assert of_kind(rt.thread.log.events, ev.CompactStart)[-1].turn is None  # no open turn
    surface_before = [e.seq for e in entries]
    assert [e.seq for e in rt.driver.surface.entries][:4] == surface_before
    await rt.aclose()


async def test_an_explicit_range_is_owned_by_the_open_turn_else_by_none(tmp_path, server):
    """Seed 003: the numeric owner is recovered from the open turn; between turns the
    bracket has none (`turn: null`), not the turn that ended before it."""
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    entries = list(rt.driver.surface.entries)
    server.script(s.text("summary of one"))
    await rt.compaction.compact_range(rt.driver, entries[0].seq, entries[1].seq)
    events = rt.thread.log.events
    start, end = of_kind(events, ev.CompactStart)[-1], of_kind(events, ev.CompactEnd)[-1]
    assert (start.turn, end.turn, end.error) == (None, None, None)
    # During a turn (its reply held), the range belongs to that turn.
    server.script(s.text("the answer to three", hold="before"), s.text("summary of two"))
    rt.driver.send("three")
    await server.wait_requests(4)
    running = rt.driver.running_turn
    assert running == 3
    kept = [e for e in rt.driver.surface.entries if not e.checkpoint]
    await rt.compaction.compact_range(rt.driver, kept[0].seq, kept[1].seq)
    assert of_kind(rt.thread.log.events, ev.CompactStart)[-1].turn == running
    assert of_kind(rt.thread.log.events, ev.CompactEnd)[-1].turn == running
    server.release()
    await asyncio.wait_for(rt.driver.when_idle(), 5)
    await rt.aclose()


async def test_explicit_range_must_be_a_valid_span(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one")
    with pytest.raises(InvalidRangeError):
        await rt.compaction.compact_range(rt.driver, 10_000, 10_001)
    assert ev.CompactStart not in kinds(rt.thread.log.events)
    await rt.aclose()


async def test_summary_failure_leaves_surface_unchanged(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    before = [e.seq for e in rt.driver.surface.entries]
    server.script(s.error(500, "boom"))
    result = await rt.commands.run("/compact")
    assert not result.ok
    assert result.text.startswith("compaction failed: the summary could not be produced (")
    assert result.text.endswith("the conversation is unchanged, only the log records the attempt")
    assert [e.seq for e in rt.driver.surface.entries] == before
    end = of_kind(rt.thread.log.events, ev.CompactEnd)[-1]
    assert end.error == "summary"
    done = of_kind(rt.thread.log.events, ev.CommandDone)[-1]
    assert done.error == result.text
    await rt.aclose()


async def test_empty_summary_is_a_summary_error(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    server.script(s.text("   "))
    with pytest.raises(CompactionError) as err:
        await rt.compaction.compact_now(rt.driver)
    # The client already refuses an empty answer; either layer's words say so.
    assert err.value.kind == "summary" and "the model returned an empty" in str(err.value)
    await rt.aclose()


@pytest.mark.parametrize(
    "cut",
    [s.cutoff("They said one and t"), s.cutoff("", cut=1), s.cutoff("All of it.", framing="close")],
    ids=["mid-word", "before-the-first-token", "after-the-last-token"],
)
async def test_a_cut_off_summary_is_a_summary_error_and_commits_nothing(tmp_path, server, cut):
    """The summary call goes through the same client: half a summary must not replace
    the turns it was meant to summarize."""
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    before = [e.seq for e in rt.driver.surface.entries]
    server.script(cut)
    with pytest.raises(CompactionError) as err:
        await rt.compaction.compact_now(rt.driver)
    assert err.value.kind == "summary"
    assert "reply cut off: the server closed the stream" in str(err.value)
    events = rt.thread.log.events
    assert bracket(events) == [ev.CompactStart, ev.CompactEnd]
    assert of_kind(events, ev.CompactEnd)[-1].error == "summary"
    assert [e for e in of_kind(events, ev.UserMessage) if e.checkpoint is not None] == []
    assert [e.seq for e in rt.driver.surface.entries] == before
    await rt.aclose()


async def test_a_cut_off_summary_on_overflow_fails_the_turn_and_keeps_the_prompt(tmp_path, server):
    rt = open_runtime(tmp_path, server, auto=False)
    await chat(rt, "one")
    server.script(s.overflow(), s.cutoff("summary of o"))
    await chat(rt, "two")
    events = rt.thread.log.events
    assert ev.CompactSummary not in kinds(events)
    assert of_kind(events, ev.CompactEnd)[-1].error == "summary"
    end = of_kind(events, ev.TurnEnd)[-1]
    assert end.status == "error" and "\n" not in end.error
    assert [e.text for e in of_kind(events, ev.UserMessage)] == ["one", "two"]
    two = of_kind(events, ev.UserMessage)[-1]
    assert end.withdrawn == (two.seq,)  # kept in the log, handed back to be sent again
    server.script(s.text("answer to three"))
    await chat(rt, "three")
    assert [m["content"] for m in chat_messages(server.requests[-1])] == [
        "one",
        "echo: one",
        "three",
    ]
    await rt.aclose()


@pytest.mark.parametrize("failing", [ev.CompactSummary, ev.UserMessage])
async def test_commit_failure_says_exactly_what_changed(tmp_path, server, failing):
    """Appends are all-or-nothing, so a commit that fails at either line leaves the
    conversation as it was, and the text says so (not "may have partly changed")."""
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    before = [e.seq for e in rt.driver.surface.entries]
    rt.thread.log.fail_kinds = {failing}
    server.script(s.text("summary"))
    with pytest.raises(CompactionError) as err:
        await rt.compaction.compact_now(rt.driver)
    assert err.value.kind == "commit"
    assert str(err.value) == (
        "compaction failed while replacing the summarized messages (No space left on device); "
        "the conversation is unchanged, only the log records the attempt"
    )
    assert of_kind(rt.thread.log.events, ev.CompactEnd)[-1].error == "commit"
    assert [e.seq for e in rt.driver.surface.entries] == before
    await rt.aclose()
    # The half-written line was cut back off: the log loads, seqs in order.
    assert read_events(rt.thread.log.path).events == rt.thread.log.events
    assert [e.seq for e in Surface.from_events(rt.thread.log.events).entries] == before


async def test_failed_close_keeps_the_lock_and_skips_the_flush(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    rt.thread.log.fail_kinds = {ev.CompactEnd}
    server.script(s.text("summary"))
    with pytest.raises(CompactionError) as err:
        await rt.compaction.compact_now(rt.driver)
    assert err.value.kind == "persistence"
    assert str(err.value).startswith("compaction was applied but could not be saved to disk (")
    assert rt.thread.log.flushes == []
    rt.thread.log.fail_kinds = set()
    await chat(rt, "three")  # the thread stays usable
    with pytest.raises(CompactionError) as again:
        await rt.compaction.compact_now(rt.driver)
    assert again.value.kind == "busy"
    await rt.aclose()


async def test_failed_flush_is_a_persistence_error(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    rt.thread.log.fail_flush = True
    server.script(s.text("summary"))
    with pytest.raises(CompactionError) as err:
        await rt.compaction.compact_now(rt.driver)
    assert err.value.kind == "persistence" and "fsync failed" in str(err.value)
    assert of_kind(rt.thread.log.events, ev.CompactEnd)[-1].error is None
    assert rt.driver.surface.entries[0].checkpoint  # the summary is in use
    await rt.aclose()


async def test_busy_text_when_a_turn_runs(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    server.script(s.text("slow", hold="before"))
    rt.driver.send("q")
    await server.wait_requests(1)
    result = await rt.commands.run("/compact")
    assert not result.ok
    assert result.text == (
        "compaction is busy: a turn is running or a queued prompt is about to start; "
        "nothing was written, try again when it has finished"
    )
    server.release()
    await asyncio.wait_for(rt.driver.when_idle(), 5)
    await rt.aclose()


COMPACTION_BUSY = (
    "compaction is busy: a compaction is already running; "
    "nothing was written, try again when it has finished"
)


async def test_busy_text_when_a_compaction_runs(tmp_path, server, monkeypatch):
    """A second /compact is refused because compaction holds the boundary, and says so:
    while the first one's summary is written (its bracket open), and before its bracket
    opens (selection, admission already reserved); a pressure compaction inside a turn
    is a compaction too."""
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    server.script(s.text("held summary", hold="before"))
    first = asyncio.ensure_future(rt.commands.run("/compact"))
    await server.wait_requests(3)
    assert rt.thread.log.tail.open_compact is not None
    second = await rt.commands.run("/compact")
    assert (second.ok, second.text) == (False, COMPACTION_BUSY)
    server.release()
    assert (await first).ok
    # Admission reserved, the selection still in its worker: no bracket yet.
    entered, go_on = threading.Event(), threading.Event()
    real = selection_module.run_drained

    async def held_selection(choose: Any, *args: Any) -> Any:
        def held(*inner: Any) -> Any:
            entered.set()
            go_on.wait(10)
            return choose(*inner)

        return await real(held, *args)

    await chat(rt, "three", "four")
    monkeypatch.setattr(selection_module, "run_drained", held_selection)
    server.script(s.text("another summary"))
    third = asyncio.ensure_future(rt.commands.run("/compact"))
    try:
        await asyncio.to_thread(entered.wait, 10)
        assert rt.thread.log.tail.open_compact is None and rt.driver.reserved
        fourth = await rt.commands.run("/compact")
        assert (fourth.ok, fourth.text) == (False, COMPACTION_BUSY)
    finally:
        go_on.set()  # a failed assert must not leave the worker waiting
    assert (await third).ok
    # A pressure compaction inside a running turn.
    await chat(rt, "five")
    rt.compaction.config = config(server, auto=True, threshold=0.0001).compaction
    server.script(s.text("held auto summary", hold="before"))
    rt.driver.send("six")
    await server.wait_requests(8)
    assert rt.thread.log.tail.open_compact is not None and rt.driver.running_turn is not None
    during = await rt.commands.run("/compact")
    assert (during.ok, during.text) == (False, COMPACTION_BUSY)
    server.release()
    await asyncio.wait_for(rt.driver.when_idle(), 5)
    await rt.aclose()


async def test_cancellation_keeps_its_exact_cause_after_close_and_flush(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    server.script(s.text("never", hold="before"))
    task = asyncio.ensure_future(rt.compaction.compact_now(rt.driver))
    await server.wait_requests(3)
    queued = rt.driver.send("typed meanwhile")
    task.cancel("Esc pressed")
    with pytest.raises(asyncio.CancelledError) as cancelled:
        await task
    assert cancelled.value.args == ("Esc pressed",)
    server.release()
    events = rt.thread.log.events
    end = of_kind(events, ev.CompactEnd)[-1]
    assert end.error == "summary" and end.cancelled == "Esc pressed"
    assert rt.thread.log.flushes == [end.seq]
    assert rt.driver.surface.entries[0].checkpoint is False
    await asyncio.wait_for(rt.driver.when_idle(), 5)  # the reservation was released
    assert of_kind(rt.thread.log.events, ev.TurnStart)[-1].items == (queued,)
    await rt.aclose()


async def test_help_and_command_rules(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    help_result = await rt.commands.run("/help")
    assert help_result.ok and "/compact" in help_result.text and "/help" in help_result.text
    rejected = await rt.commands.run("/compact foo")
    assert not rejected.ok and rejected.text == "/compact takes no arguments (got 'foo')"
    unknown = await rt.commands.run("/compat")
    assert unknown.text == "unknown command /compat (did you mean /compact?)"
    assert ev.CompactStart not in kinds(rt.thread.log.events)
    # Commands never reach the model and never take a turn number.
    await chat(rt, "hello")
    assert of_kind(rt.thread.log.events, ev.TurnStart)[0].turn == 1
    sent = server.requests[-1]["messages"]
    assert all("/help" not in str(m["content"]) for m in sent)
    await rt.aclose()


async def test_a_new_command_appears_in_help(tmp_path, server):
    rt = open_runtime(tmp_path, server)

    @rt.commands.add("zeta", "a late addition")
    async def _zeta(args: str) -> str:
        return "z"

    assert "/zeta" in (await rt.commands.run("/help")).text
    await rt.aclose()


async def test_any_exception_from_the_summarizer_still_closes_the_bracket(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")

    async def broken(messages: Any, **kw: Any) -> Any:
        raise KeyError("not a model error")

    complete, rt.compaction.model.complete = rt.compaction.model.complete, broken
    result = await rt.commands.run("/compact")
    assert not result.ok and "KeyError" in result.text
    assert result.text.endswith("the conversation is unchanged, only the log records the attempt")
    assert rt.thread.log.tail.open_compact is None
    assert of_kind(rt.thread.log.events, ev.CompactEnd)[-1].error == "summary"
    rt.compaction.model.complete = complete
    server.script(s.text("a summary"))
    assert (await rt.commands.run("/compact")).ok  # not busy until restart
    await rt.aclose()


async def test_esc_during_the_archive_write_keeps_the_committed_compaction(tmp_path, server):
    """The checkpoint is committed: the originals are archived and the bracket says
    success (with the cancel noted), and the command reports what really happened."""
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    store = rt.continuity.store
    capture, entered, go_on = store.capture, asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()

    def slow_capture(key: int, records: Any) -> Any:
        loop.call_soon_threadsafe(entered.set)
        asyncio.run_coroutine_threadsafe(go_on.wait(), loop).result(10)
        return capture(key, records)

    store.capture = slow_capture
    server.script(s.text("summary"))
    command = asyncio.ensure_future(rt.commands.run("/compact"))
    await asyncio.wait_for(entered.wait(), 10)
    command.cancel("Esc")
    go_on.set()
    result = await command
    assert result.ok and result.text.startswith("Compacted")
    assert "too late to stop it" in result.text
    end = of_kind(rt.thread.log.events, ev.CompactEnd)[-1]
    assert end.error is None and end.cancelled == "Esc" and end.archive["batch"] >= 1
    assert rt.continuity.snapshot().view().status == "available"
    await rt.aclose()


async def test_shutdown_during_compact_unwinds_before_the_log_closes(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    await chat(rt, "one", "two")
    server.script(s.text("never finished", hold="before"))
    command = asyncio.ensure_future(rt.commands.run("/compact"))
    await server.wait_requests(3)
    queued = rt.driver.send("queued when the user quit")
    await rt.aclose()
    assert command.done()
    server.release()
    events = read_events(rt.thread.log.path).events
    assert kinds(events, ev.CompactStart, ev.CompactEnd, ev.CommandDone)[-3:] == [
        ev.CompactStart,
        ev.CompactEnd,
        ev.CommandDone,
    ]
    assert of_kind(events, ev.CompactEnd)[-1].cancelled == "session closing"
    # The prompt queued behind /compact did not start during shutdown; it waits.
    assert queued not in [i for e in of_kind(events, ev.TurnStart) for i in e.items]


async def test_a_listener_that_raises_never_reaches_the_turn_or_the_compaction(tmp_path, server):
    rt = open_runtime(tmp_path, server)
    seen: list[str] = []

    def broken(event: dict[str, Any]) -> None:
        seen.append(type(event))
        raise LookupError("NoMatches: 'TitleBar'")

    rt.thread.log.subscribe(broken)
    rt.thread.log.on_listener_error = lambda listener, event, exc: seen.append("reported")
    await chat(rt, "one", "two")
    server.script(s.text("summary"))
    assert (await rt.commands.run("/compact")).ok
    events = rt.thread.log.events
    assert [e.status for e in of_kind(events, ev.TurnEnd)] == ["ok", "ok"]
    assert rt.thread.log.tail.open_compact is None
    assert seen.count("reported") == len(events) and ev.TurnEnd in seen
    await rt.aclose()


def _chatted_log(path: Path, exchanges: int) -> tuple[SessionLog, Surface]:
    log = SessionLog.open(path)
    surface = Surface.from_events(log.events)
    log.projections.append(surface.apply)
    for n in range(exchanges):
        log.append(ev.UserMessage(text=f"question {n}"))
        log.append(ev.AssistantMessage(content=f"answer {n}"))
    return log, surface


def test_a_checked_span_survives_appends_and_is_rechecked_after_a_reshape(tmp_path):
    """Stability in constant time: appends never move a checked run; a checkpoint
    taking any span's place (a reshape) sends the span back to the full check."""
    log, surface = _chatted_log(tmp_path / "session.jsonl", 4)
    span = select_range(surface, keep_recent_tokens=0)
    assert span is not None and span.reshapes == surface.reshapes == 0
    assert (span.first, span.last, span.count) == (1, 8, 8)
    log.append(ev.UserMessage(text="appended while the summary is written"))
    assert span_problem(surface, span) is None
    assert [e.seq for e in span.entries(surface)] == list(range(1, 9))
    summary = log.append(ev.CompactSummary(replaced=[3], summary="x"))
    log.append(ev.UserMessage(text="rogue", checkpoint=ev.Checkpoint(summary=summary.seq)))
    assert surface.reshapes == 1
    assert span_problem(surface, span) == "a selected message is no longer on the surface"
    log.close()


async def test_capture_prepares_its_records_off_the_loop(tmp_path, monkeypatch):
    """The archive records (extraction, hashing) are prepared in a worker thread from
    snapshots; the loop only takes the snapshots and awaits."""
    log, surface = _chatted_log(tmp_path / "session.jsonl", 3)
    store = ArchiveStore(tmp_path / "history.sqlite", TaskContinuityConfig())
    context = ContinuityContext.for_log(log, surface, store, user_id="u", thread_id="t")
    threads: list[threading.Thread] = []
    real = capture_module.prepare_records

    def prepare(entries: list[Any], events: list[Any]) -> Any:
        threads.append(threading.current_thread())
        return real(entries, events)

    monkeypatch.setattr(capture_module, "prepare_records", prepare, raising=True)
    span = select_range(surface, keep_recent_tokens=0)
    assert span is not None

    async def summarize(entries: list[Any]) -> Any:
        return Completion(content="summary", tool_calls=[], usage=None, finish_reason="stop")

    outcome = await run_region(
        log,
        surface,
        span,
        Region(None, "span", False),
        summarize=summarize,
        capture=capture_module.capture_hook(context),
    )
    assert outcome.archive is not None and "batch" in outcome.archive
    assert threads and threads[0] is not threading.main_thread()
    store.close()
    log.close()


async def test_selection_off_the_loop_chooses_again_when_a_checkpoint_reshaped_meanwhile(
    tmp_path, monkeypatch
):
    """Selection reads the live entries in a worker; should a checkpoint land while it
    runs, what it read may be torn, so the span is chosen again on the loop."""
    log, surface = _chatted_log(tmp_path / "session.jsonl", 4)
    real = selection_module.run_drained

    async def reshaping(fn: Any, *args: Any) -> Any:
        chosen = await real(fn, *args)
        summary = log.append(ev.CompactSummary(replaced=[1, 2], summary="x"))
        log.append(ev.UserMessage(text="cp", checkpoint=ev.Checkpoint(summary=summary.seq)))
        return chosen

    monkeypatch.setattr(selection_module, "run_drained", reshaping)
    span = await selection_module.select_offloaded(surface, keep_recent_tokens=0)
    assert span is not None and span.reshapes == surface.reshapes == 1
    assert span_problem(surface, span) is None
    assert span == select_range(surface, keep_recent_tokens=0)
    log.close()


async def test_a_summarizer_keeps_the_entries_it_was_given(tmp_path):
    """The transaction frees the span's entries in a worker once done, without ever
    emptying the list a summarizer saw."""
    log, surface = _chatted_log(tmp_path / "session.jsonl", 3)
    kept: list[list[Any]] = []

    async def summarize(entries: list[Any]) -> Any:
        kept.append(entries)
        return Completion(content="summary", tool_calls=[], usage=None, finish_reason="stop")

    span = select_range(surface, keep_recent_tokens=0)
    assert span is not None
    outcome = await run_region(log, surface, span, Region(None, "span", False), summarize=summarize)
    assert outcome.replaced == 6
    await asyncio.get_running_loop().shutdown_default_executor()  # the freeing has run
    assert [entry.seq for entry in kept[0]] == [1, 2, 3, 4, 5, 6]
    log.close()


def test_the_summary_request_renders_each_entry_from_its_event():
    """Rendered from the events (no chat message is built or cached on the entries);
    a checkpoint reads as an earlier summary, a call as its tool and arguments."""
    from engine.compaction.prompt import summary_request
    from engine.surface import Entry

    entries = [
        Entry(1, "user", ev.UserMessage(text="summary so far"), 4, checkpoint=True),
        Entry(2, "user", ev.UserMessage(text="hi"), 4),
        Entry(
            3,
            "assistant",
            ev.AssistantMessage(content="", tool_calls=[ev.ToolCall(id="c", name="t")]),
            4,
        ),
        Entry(4, "tool", ev.ToolResult(call_id="c", content="found"), 4),
    ]
    content = summary_request(entries)[1]["content"]
    assert content == (
        "Summarize this conversation:\n\n<conversation>\n"
        "[summary of earlier conversation]\nsummary so far\n\n"
        "[user]\nhi\n\n"
        "[assistant]\n(calls tool t with {})\n\n"
        "[tool]\nfound\n</conversation>"
    )
    assert all(entry._message is None for entry in entries)
