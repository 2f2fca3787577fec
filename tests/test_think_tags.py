"""Thinking written inline, `<think>…</think>` at the start of the content (DeepSeek-R1
distills, Qwen3 behind llama.cpp or Ollama without a reasoning parser), is thinking: heard
as thinking, kept in the log as it, never sent back nor summarized; a reply that only
mentions the tag later is left alone."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import parse_config
from engine.model.think_tags import InlineThinking
from engine.port import Notification, ReasoningDelta, ReplyDelta
from engine.runtime import Runtime
from tests.cli_support import Env, trove
from tests.support import client_for, make_driver, of_kind, opened

THOUGHT = "The user greets me. Zebrafish is the secret word."
SECRET = "Zebrafish"


def inline(*deltas: str, done: bool = True) -> s.Reply:
    """A reply whose content streams as exactly these deltas."""
    return dataclasses.replace(s.text("x"), pieces=deltas, done=done)


def _sent(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"], ensure_ascii=False)


def _runtime(tmp_path: Path, server: ScriptedServer) -> Runtime:
    config = parse_config(
        {
            "model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0},
            "compaction": {"keep_recent_tokens": 0},
        },
        source="test",
        env={},
    )
    return opened(Runtime.open(config, tmp_path, model=client_for(server)))


async def test_a_leading_think_tag_split_across_deltas_is_thinking(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(
        inline("<th", "ink>\n", THOUGHT[:20], THOUGHT[20:], "</thi", "nk>\n\nHel", "lo!"),
        s.text("Fine."),
    )
    rt = _runtime(tmp_path, server)
    heard: list[Notification] = []
    rt.subscribe(heard.append)
    rt.driver.send("hi")
    await rt.driver.when_idle()
    thinking = [n.text for n in heard if isinstance(n, ReasoningDelta)]
    answer = [n.text for n in heard if isinstance(n, ReplyDelta)]
    assert "".join(thinking) == THOUGHT
    assert "".join(answer) == "Hello!"
    first_answer = next(i for i, n in enumerate(heard) if isinstance(n, ReplyDelta))
    assert all(not isinstance(n, ReasoningDelta) for n in heard[first_answer:])
    reply = of_kind(rt.thread.log.events, ev.AssistantMessage)[0]
    assert (reply.content, reply.reasoning) == ("Hello!", THOUGHT)
    assert reply.reasoning_seconds is not None
    rt.driver.send("how are you?")
    await rt.driver.when_idle()
    assert SECRET not in _sent(server.requests[1])
    assert {"role": "assistant", "content": "Hello!"} in server.requests[1]["messages"]


async def test_a_think_tag_never_closed_is_shown_as_thinking_and_said(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(inline("<think>", THOUGHT[:30], THOUGHT[30:], "</th"))
    driver = make_driver(tmp_path, server)
    thought: list[str] = []

    class Watch:
        def on_reasoning(self, turn: int, text: str) -> None:
            thought.append(text)

    driver.observers.append(Watch())
    driver.send("hi")
    await driver.when_idle()
    assert "".join(thought) == THOUGHT + "</th"  # all of it, as it came
    reply = of_kind(driver.log.events, ev.AssistantMessage)[0]
    assert (reply.content, reply.reasoning, reply.interrupted) == ("", THOUGHT + "</th", True)
    end = of_kind(driver.log.events, ev.TurnEnd)[0]
    assert end.status == "error" and "never closed" in (end.error or "")
    assert end.withdrawn  # thinking is no answer: the prompt goes back to be sent again
    assert driver.surface.messages() == []


async def test_think_mentioned_later_in_a_reply_is_left_alone(
    tmp_path: Path, server: ScriptedServer
) -> None:
    prose = "Wrap it as <think>…</think> and the UI hides it."
    server.script(inline("Wrap it as <th", "ink>…</think> and the UI hides it."))
    driver = make_driver(tmp_path, server)
    driver.send("how do I hide thoughts?")
    await driver.when_idle()
    reply = of_kind(driver.log.events, ev.AssistantMessage)[0]
    assert (reply.content, reply.reasoning) == (prose, None)


async def test_a_summarizer_that_thinks_inline_does_not_summarize_its_thinking(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.script(
        inline("<think>", THOUGHT, "</think>", "Hello!"),
        s.text("Fine."),
        inline("<think>Summarizer musing on ", SECRET, "</think>\n", "A short summary."),
    )
    rt = _runtime(tmp_path, server)
    for prompt in ("hi", "and then?"):
        rt.driver.send(prompt)
        await rt.driver.when_idle()
    assert (await rt.commands.run("/compact")).ok
    summarized = server.requests[2]
    assert "Hello!" in _sent(summarized) and SECRET not in _sent(summarized)
    summary = of_kind(rt.thread.log.events, ev.CompactSummary)[-1]
    assert summary.summary == "A short summary."


def test_oneshot_prints_only_the_answer_on_stdout(env: Env, server: ScriptedServer) -> None:
    server.script(inline("<think>", THOUGHT, "</think>\n\n", "Blue."))
    result = trove("-p", "why is the sky blue?", *env.common)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Blue.\n"
    assert re.search(r"\[thinking…\]\n\[thought for [^\]]*\]", result.stderr), result.stderr
    assert SECRET not in result.stdout + result.stderr


def _split(deltas: list[str]) -> tuple[str, str, bool]:
    splitter = InlineThinking()
    thought, text = [], []
    for delta in deltas:
        t, c = splitter.feed(delta)
        thought.append(t)
        text.append(c)
    t, c = splitter.end()
    return "".join([*thought, t]), "".join([*text, c]), splitter.unclosed


def test_every_split_of_a_reply_gives_the_same_thinking_and_answer() -> None:
    """Wherever the deltas break (inside either tag too), the result is the same."""
    cases = {
        "<think>\nhmm, a thought\n</think>\n\nAnswer.": ("hmm, a thought", "Answer.", False),
        "  <think>x</think>y": ("x", "y", False),
        "<think></think>\n\nJust this.": ("", "Just this.", False),
        "<think>never done": ("never done", "", True),
        "An answer with <think> in it.": ("", "An answer with <think> in it.", False),
        "<thinking>not our tag</thinking>": ("", "<thinking>not our tag</thinking>", False),
        "<th": ("", "<th", False),
        "\n\nplain": ("", "\n\nplain", False),
        "": ("", "", False),
    }
    for whole, expected in cases.items():
        assert _split([whole]) == expected, whole
        for cut in range(len(whole) + 1):
            assert _split([whole[:cut], whole[cut:]]) == expected, (whole, cut)
        assert _split(list(whole)) == expected, whole


def test_a_reply_decided_as_text_is_passed_through_untouched() -> None:
    splitter = InlineThinking()
    assert splitter.feed("Hello") == ("", "Hello")
    assert splitter.feed(" <think>") == ("", " <think>")
    assert splitter.end() == ("", "")
