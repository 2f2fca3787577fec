"""Issue 13, rewind: the thread goes back to before a prompt, and the log keeps the rest."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from devtools import scripted_server as s
from engine import events as ev
from engine.config import parse_config
from engine.log import SessionLog
from engine.log.line import current_line
from engine.runtime import Runtime
from engine.runtime.rewind import RewindRefused, choose, points, refusal, rewind
from engine.surface import Surface
from engine.workspace.fork import fork_thread
from tests.support import client_for, of_kind, opened

ONE = "ALPHA-1111"
TWO = "BRAVO-2222"


def config(server):
    return parse_config(
        {
            "model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0},
            "compaction": {"keep_recent_tokens": 0},
        },
        source="test",
        env={},
    )


def runtime(tmp_path: Path, server, thread_id: str | None = None) -> Runtime:
    return opened(
        Runtime.open(config(server), tmp_path, thread_id=thread_id, model=client_for(server))
    )


async def chat(rt: Runtime, *prompts: str) -> None:
    for prompt in prompts:
        rt.driver.send(prompt)
        await asyncio.wait_for(rt.driver.when_idle(), 30)


async def compact(rt: Runtime, server) -> None:
    server.script(s.text("A summary that names no code."))
    result = await rt.commands.run("/compact")
    assert result.ok, result.text


def search(rt: Runtime, query: str) -> dict[str, Any]:
    assert rt.continuity is not None
    return rt.continuity.snapshot().view().search(query)


async def two_compactions(rt: Runtime, server) -> None:
    await chat(rt, f"code one is {ONE}")
    await compact(rt, server)
    await chat(rt, f"code two is {TWO}")
    await compact(rt, server)
    await chat(rt, "third prompt")


def texts(point_list) -> list[str]:
    return [p.text for p in point_list]


async def test_rewind_scopes_history_to_the_position_and_keeps_the_future(tmp_path, server):
    rt = runtime(tmp_path, server)
    await two_compactions(rt, server)
    log = rt.thread.log
    assert texts(points(log)) == ["third prompt", f"code two is {TWO}", f"code one is {ONE}"]
    assert search(rt, TWO)["results"] and search(rt, ONE)["results"]
    later = search(rt, TWO)["results"][0]["id"]
    assert rt.continuity is not None
    assert TWO in rt.continuity.snapshot().view().read(later)["text"]
    size = len(log.file_events)

    # Back to just before the second code: the first compaction's batch only.
    assert rewind(rt.driver, log, choose(log, 2)) == f"code two is {TWO}"
    assert len(log.file_events) == size + 1  # one line appended; nothing removed
    assert not any(TWO in getattr(e, "text", "") for e in log.events)
    assert search(rt, TWO)["results"] == []
    unread = rt.continuity.snapshot().view().read(later)
    assert unread["error"] == "source_unavailable" and "text" not in unread
    hit = search(rt, ONE)
    assert hit["status"] == "available" and hit["results"][0]["batch"] is not None
    assert [e.role for e in rt.driver.surface.entries][:1] == ["user"]
    assert rt.driver.surface.entries[0].checkpoint  # compacted once on this line

    # Further back, before the first prompt: nothing was ever compacted here.
    listed = points(log)
    assert [p.on_line for p in listed] == [False, False, True]
    rewind(rt.driver, log, choose(log, 3))
    nothing = search(rt, ONE)
    assert nothing["status"] == "uninitialized" and nothing["results"] == []
    assert rt.driver.surface.entries == []
    assert rt.driver.inbox == []  # the rewound prompt is not queued again

    # A new line: its own turn, its own compaction, its own batch.
    await chat(rt, f"new code is {ONE}-NEW")
    await compact(rt, server)
    batches = [e.archive["batch"] for e in of_kind(log.events, ev.CompactEnd)]
    everything = [e.archive["batch"] for e in of_kind(log.file_events, ev.CompactEnd)]
    assert len(batches) == 1 and batches[0] not in everything[:-1]
    assert search(rt, TWO)["results"] == []
    turns = [e.turn for e in of_kind(log.file_events, ev.TurnStart)]
    assert len(turns) == len(set(turns))  # turn numbers stay unique across branches

    # The abandoned branch is still reachable: back to before the third prompt.
    third = next(p for p in points(log) if p.text == "third prompt")
    assert not third.on_line
    rewind(rt.driver, log, third)
    assert search(rt, TWO)["results"] and search(rt, ONE)["results"]
    await rt.aclose()


async def test_replay_reproduces_the_line(tmp_path, server):
    rt = runtime(tmp_path, server)
    await two_compactions(rt, server)
    log = rt.thread.log
    rewind(rt.driver, log, choose(log, 2))
    await chat(rt, "a different second prompt")
    line = [e.seq for e in log.events]
    surface = [(e.seq, e.role, e.checkpoint) for e in rt.driver.surface.entries]
    found = search(rt, ONE)["results"]
    thread_id = rt.thread.id
    await rt.aclose()

    again = runtime(tmp_path, server, thread_id)
    log2 = again.thread.log
    assert [e.seq for e in log2.events][:-1] == line  # and the resume's end-seed
    assert isinstance(log2.events[-1], ev.EndSeed)
    assert [(e.seq, e.role, e.checkpoint) for e in again.driver.surface.entries] == surface
    assert Surface.from_events(log2.events).entries == again.driver.surface.entries
    assert search(again, ONE)["results"] == found and search(again, TWO)["results"] == []
    assert again.driver.inbox == []
    assert log2.tail.open_turn is None and log2.tail.open_compact is None
    assert log2.tail.last_turn == max(e.turn for e in of_kind(log2.file_events, ev.TurnStart))
    # A fork copies the line the thread is on, not the abandoned branch.
    child = fork_thread(tmp_path, "local", thread_id)
    forked = SessionLog.open(tmp_path / "users" / "local" / "threads" / child / "session.jsonl")
    said = [e.text for e in of_kind(forked.events, ev.UserMessage)]
    assert "a different second prompt" in said and not any(TWO in t for t in said)
    forked.close()
    await again.aclose()


def test_line_of_a_tree_and_of_a_malformed_rewind():
    def at(seq: int, event: ev.Event) -> ev.Event:
        return event.__class__(
            **{**{f: getattr(event, f) for f in event.__struct_fields__}, "seq": seq}
        )

    events = [
        at(1, ev.UserMessage(text="a")),
        at(2, ev.UserMessage(text="b")),
        at(3, ev.SessionRewind(after=1)),
        at(4, ev.UserMessage(text="c")),
        at(5, ev.SessionRewind(after=2)),
        at(6, ev.SessionRewind(after=9)),  # malformed: read as an ordinary event
    ]
    assert [e.seq for e in current_line(events[:4])] == [1, 3, 4]
    assert [e.seq for e in current_line(events[:5])] == [1, 2, 5]
    assert [e.seq for e in current_line(events)] == [1, 2, 5, 6]
    assert current_line(events[:2]) == events[:2]


async def test_rewind_is_refused_while_busy(tmp_path, server):
    rt = runtime(tmp_path, server)
    await chat(rt, "one", "two")
    log, driver = rt.thread.log, rt.driver
    point = choose(log, 1)

    # A reply runs.
    server.script(s.text("held reply", hold=True))
    driver.send("three")
    await server.wait_requests(3)
    with pytest.raises(RewindRefused, match="reply runs"):
        rewind(driver, log, point)
    # A prompt queued behind it blocks too, once the reply is done.
    driver.send("queued four")
    server.script(s.text("held reply", hold=True))
    server.release()
    await server.wait_requests(4)
    assert refusal(driver, log) is not None
    server.release()
    await asyncio.wait_for(driver.when_idle(), 30)

    # A compaction runs: the bracket is the lock.
    server.script(s.text("held summary", hold=True))
    task = asyncio.create_task(rt.commands.run("/compact"))
    await server.wait_requests(5)
    assert log.tail.open_compact is not None
    before = len(log.file_events)
    result = await rt.commands.run("/rewind 1")
    assert not result.ok and "compaction runs" in result.text
    assert not of_kind(log.file_events, ev.SessionRewind) and len(log.file_events) > before
    server.release()
    assert (await task).ok

    # A restored (quiet) prompt left queued blocks as well: it would be lost.
    driver.send("left queued", waking=False)
    with pytest.raises(RewindRefused, match="prompt is queued"):
        rewind(driver, log, point)
    await rt.aclose()


async def test_rewind_command_lists_and_rewinds(tmp_path, server):
    rt = runtime(tmp_path, server)
    empty = await rt.commands.run("/rewind")
    assert empty.ok and "no prompts" in empty.text
    await chat(rt, "first question", "second question")
    listing = await rt.commands.run("/rewind")
    assert listing.ok
    lines = listing.text.splitlines()
    assert "second question" in lines[1] and lines[1].split()[0] == "1"
    assert "first question" in lines[2]
    bad = await rt.commands.run("/rewind 9")
    assert not bad.ok and "no prompt 9" in bad.text
    done = await rt.commands.run("/rewind 1")
    assert done.ok and done.text.endswith("second question")
    assert [e.text for e in of_kind(rt.thread.log.events, ev.UserMessage)] == ["first question"]
    assert "rewind" in (await rt.commands.run("/help")).text
    await rt.aclose()


async def test_recovery_finds_the_originals_on_a_rewound_line(tmp_path, server):
    """A compaction's originals are found by seq, not by index: a line has gaps."""
    from engine.continuity.recovery import originals

    rt = runtime(tmp_path, server)
    await chat(rt, "one", "two", "three")
    log = rt.thread.log
    rewind(rt.driver, log, choose(log, 2))  # back to before "two"
    await chat(rt, "four", "five")
    await compact(rt, server)
    start = of_kind(log.events, ev.CompactStart)[-1].seq
    assert start > len(log.events)  # the line is shorter than its seqs
    found = originals(log.events, start)
    assert found is not None
    entries, _ = found
    said = [e.message["content"] for e in entries if e.role == "user"]
    assert said and "two" not in said and "three" not in said
    await rt.aclose()
