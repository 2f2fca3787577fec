"""Reasoning models (issue 28, point 1): the thinking streamed before an answer is heard
as it comes, kept in the log, and never sent back to the model, summarized or archived."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import parse_config
from engine.continuity import ArchiveStore, archive_path
from engine.port import LogAppended, Notification, ReasoningDelta, ReplyDelta
from engine.runtime import Runtime
from engine.workspace.fork import fork_thread
from tests.support import LIMIT, client_for, make_driver, of_kind, opened

THOUGHT = "The user greets me. Zebrafish is the secret word I must not repeat."
SECRET = "Zebrafish"


def _runtime(tmp_path: Path, server: ScriptedServer, **continuity: Any) -> Runtime:
    config = parse_config(
        {
            "model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0},
            "compaction": {"keep_recent_tokens": 0},
            "task_continuity": continuity,
        },
        source="test",
        env={},
    )
    return opened(Runtime.open(config, tmp_path, model=client_for(server)))


def _sent(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"], ensure_ascii=False)


async def _until_thinking(driver: Any) -> None:
    """Resolve once the running reply has streamed thinking: told by the driver."""
    arrived = asyncio.Event()

    class Watch:
        def on_reasoning(self, turn: int, text: str) -> None:
            arrived.set()

    driver.observers.append(Watch())
    if not driver.partial_reasoning:
        await asyncio.wait_for(arrived.wait(), LIMIT)


async def test_the_thinking_is_kept_in_the_log_and_never_sent_back(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(s.text("Hello!", reasoning=THOUGHT), s.text("Fine."))
    driver = make_driver(tmp_path, server)
    driver.send("hi")
    await driver.when_idle()
    reply = of_kind(driver.log.events, ev.AssistantMessage)[0]
    assert reply.content == "Hello!"
    assert reply.reasoning == THOUGHT
    assert reply.reasoning_seconds is not None and reply.reasoning_seconds >= 0
    driver.send("how are you?")
    await driver.when_idle()
    second = server.requests[1]
    assert SECRET not in _sent(second)
    assert all("reasoning" not in key for m in second["messages"] for key in m)
    assert {"role": "assistant", "content": "Hello!"} in second["messages"]


async def test_the_thinking_reaches_the_port_before_the_answer(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(s.text("Hello there.", reasoning=THOUGHT, reasoning_field="reasoning"))
    rt = _runtime(tmp_path, server)
    heard: list[Notification] = []
    rt.subscribe(heard.append)
    rt.driver.send("hi")
    await rt.driver.when_idle()
    thinking = [i for i, n in enumerate(heard) if isinstance(n, ReasoningDelta)]
    text = [i for i, n in enumerate(heard) if isinstance(n, ReplyDelta)]
    assert "".join(heard[i].text for i in thinking) == THOUGHT  # type: ignore[union-attr]
    assert "".join(heard[i].text for i in text) == "Hello there."  # type: ignore[union-attr]
    assert max(thinking) < min(text)
    logged = next(
        n.event
        for n in heard
        if isinstance(n, LogAppended) and isinstance(n.event, ev.AssistantMessage)
    )
    assert logged.reasoning == THOUGHT


async def test_a_stream_cut_off_while_thinking_keeps_the_thinking(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """The partial thinking is kept, marked cut off; it is no answer, so the prompt is
    withdrawn (given back) and the model is sent no empty reply."""
    server.script(s.cutoff("never", reasoning=THOUGHT, cut=4, chunk_chars=6), s.text("ok"))
    driver = make_driver(tmp_path, server)
    driver.send("hi")
    await driver.when_idle()
    reply = of_kind(driver.log.events, ev.AssistantMessage)[0]
    assert (reply.content, reply.interrupted) == ("", True)
    assert reply.reasoning == THOUGHT[:18]
    end = of_kind(driver.log.events, ev.TurnEnd)[0]
    assert end.status == "error" and end.withdrawn
    driver.send("hi again")
    await driver.when_idle()
    messages = server.requests[1]["messages"]
    assert [m["role"] for m in messages] == ["user"]
    assert messages[0]["content"] == "hi again"


async def test_a_reply_cancelled_while_thinking_keeps_the_thinking(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(s.text("never shown", reasoning=THOUGHT, hold=True))
    driver = make_driver(tmp_path, server)
    driver.send("hi")
    await _until_thinking(driver)
    assert driver.partial_reasoning == THOUGHT[:4]
    await driver.stop_turn()
    server.release()
    reply = of_kind(driver.log.events, ev.AssistantMessage)[0]
    assert (reply.content, reply.cancelled, reply.reasoning) == ("", True, THOUGHT[:4])
    assert reply.reasoning_seconds is not None
    assert driver.surface.messages() == [{"role": "user", "content": "hi"}]


async def test_the_thinking_of_a_tool_round_is_kept_with_its_calls(
    tmp_path: Path, server: ScriptedServer
) -> None:
    from engine.model.tools import ToolBox
    from tests.support import echo_tool

    server.script(
        s.tool_calls([("echo", {"text": "x"})], reasoning="I will call echo."),
        s.text("Done.", reasoning="The tool answered."),
    )
    driver = make_driver(tmp_path, server, tools=ToolBox([echo_tool()]))
    driver.send("go")
    await driver.when_idle()
    replies = of_kind(driver.log.events, ev.AssistantMessage)
    assert [r.reasoning for r in replies] == ["I will call echo.", "The tool answered."]
    assert "I will call echo" not in _sent(server.requests[1])


def test_old_lines_decode_unchanged_and_new_ones_only_add_the_fields() -> None:
    old = b'{"kind":"assistant/message","seq":3,"ts":"t","content":"hi"}'
    event = msgspec.json.decode(old, type=ev.AssistantMessage)
    assert (event.reasoning, event.reasoning_seconds) == (None, None)
    assert msgspec.json.encode(event) == old
    new = ev.AssistantMessage(seq=4, ts="t", content="hi", reasoning="hm", reasoning_seconds=1.5)
    assert ev.to_dict(new) == {
        "kind": "assistant/message",
        "seq": 4,
        "ts": "t",
        "content": "hi",
        "reasoning": "hm",
        "reasoning_seconds": 1.5,
    }


async def test_compaction_neither_summarizes_nor_archives_the_thinking(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """The summarizer's input is what the model saw (the answers); the archive holds the
    messages as they were sent, so the thinking is in neither. A summarizer that thinks
    does not put its thinking in the summary."""
    server.script(
        s.text("Hello!", reasoning=THOUGHT),
        s.text("Fine.", reasoning="Another thought about Zebrafish."),
        s.text("A short summary.", reasoning="Summarizer musing on Zebrafish."),
    )
    rt = _runtime(tmp_path, server)
    for prompt in ("hi", "and then?"):
        rt.driver.send(prompt)
        await rt.driver.when_idle()
    assert (await rt.commands.run("/compact")).ok
    summarized = server.requests[2]
    assert "Hello!" in _sent(summarized)
    assert SECRET not in _sent(summarized)
    summary = of_kind(rt.thread.log.events, ev.CompactSummary)[-1]
    assert summary.summary == "A short summary."
    store = ArchiveStore(archive_path(rt.thread.dir), rt.config.task_continuity, readonly=True)
    try:
        archived = [source.text for source in store.sources(1)]
    finally:
        store.close()
    assert "Hello!" in archived
    assert not any(SECRET in text for text in archived)


async def test_a_fork_keeps_the_thinking_on_screen_not_in_the_request(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(s.text("Hello!", reasoning=THOUGHT))
    rt = _runtime(tmp_path, server)
    rt.driver.send("hi")
    await rt.driver.when_idle()
    parent = rt.thread.id
    await rt.aclose()
    child = fork_thread(tmp_path, "local", parent)
    forked = opened(Runtime.open(rt.config, tmp_path, thread_id=child, model=client_for(server)))
    reply = of_kind(forked.thread.log.events, ev.AssistantMessage)[0]
    assert reply.reasoning == THOUGHT
    assert SECRET not in json.dumps(forked.driver.surface.messages())


def test_the_thinking_is_summed_up_the_same_way_everywhere() -> None:
    from engine.util.thought import thought_line

    assert thought_line(3456, 12.4) == "thought for 12s (3,456 chars)"
    assert thought_line(1, 0.44) == "thought for 0.4s (1 char)"
    assert thought_line(10, 125) == "thought for 2m 05s (10 chars)"
    assert thought_line(10, None) == "thought (10 chars)"
