"""A fault family: the server cuts streams off at random points, 50 reproducible cases.

Each case closes a stream cleanly (no finish reason, no ``[DONE]``) at one of
four points: before the first token, mid-word, mid tool-call arguments, or
after the last token. Whatever the point, the turn ends as a ``cut_off`` error
with the driver idle, the text so far is kept and marked interrupted, the
prompt is in the log once and in the next request once (or, when nothing came
back, withdrawn from it to be sent again), and the thread
reopened from disk takes another turn. One server and one home serve every
case, and the engine is driven in-process, so the family stays fast.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import Config, parse_config
from engine.log import read_events
from engine.runtime import Runtime
from tests.support import LIMIT, chat_messages, client_for, of_kind

SEED = 20250425
CASES = 50
POINTS = ("before-first-token", "mid-word", "mid-tool-arguments", "after-last-token")
CUT_OFF = "reply cut off: the server closed the stream"
WORDS = ("alpha", "beta", "gamma", "river", "stone", "cloud", "lantern", "copper")


@dataclass(frozen=True)
class Case:
    """One cut: the reply the server streams, the text the client sees before the end,
    and the turns before it (a cut on a thread with history, or on its first turn)."""

    index: int
    point: str
    reply: s.Reply
    sent: str
    warm_up: bool

    def __str__(self) -> str:
        return f"{self.index:02d}-{self.point}-{self.reply.framing}"


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + "."


def _mid_word(rng: random.Random, text: str) -> int:
    """A cut inside a word: letters on both sides of it."""
    inside = [i for i in range(1, len(text)) if text[i - 1].isalpha() and text[i].isalpha()]
    return rng.choice(inside)


def _case(index: int, rng: random.Random) -> Case:
    point = POINTS[index % len(POINTS)]  # every point gets its share of the 50
    framing: s.Framing = rng.choice(("chunked", "close"))
    chunk = rng.randint(1, 7)
    text = _sentence(rng)
    if point == "before-first-token":
        # No byte at all, or only the role delta: nothing that could be shown.
        reply = s.cutoff(text, cut=rng.choice((0, 1)), framing=framing)
        sent = ""
    elif point == "mid-word":
        sent = text[: _mid_word(rng, text)]
        reply = s.cutoff(sent, chunk_chars=chunk, framing=framing)
    elif point == "mid-tool-arguments":
        sent = rng.choice(("", _sentence(rng)))
        args = json.dumps({"query": " ".join(rng.sample(WORDS, 3))})
        call = (rng.choice(("history_search", "echo")), args[: rng.randint(1, len(args) - 1)])
        reply = s.cutoff(sent, calls=[call], chunk_chars=chunk, framing=framing)
    else:
        sent = text
        reply = s.cutoff(text, chunk_chars=chunk, framing=framing)
    return Case(index, point, reply, sent, warm_up=rng.random() < 0.5)


def _cases() -> list[Case]:
    rng = random.Random(SEED)
    return [_case(i, rng) for i in range(CASES)]


@pytest.fixture(scope="module")
def shared_server() -> Iterator[ScriptedServer]:
    """One server for the family: each case scripts its replies and reads its requests."""
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cutoff-home")


def _config(server: ScriptedServer) -> Config:
    return parse_config(
        {"model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0}},
        source="test",
        env={},
    )


async def _turn(runtime: Runtime, prompt: str) -> ev.TurnEnd:
    """Send `prompt`, wait for the driver to be idle again, and return how the turn ended."""
    runtime.driver.send(prompt)
    await asyncio.wait_for(runtime.driver.when_idle(), LIMIT)
    return of_kind(runtime.thread.log.events, ev.TurnEnd)[-1]


def _this_turn(events: list[ev.LogEvent], turn: int) -> list[ev.LogEvent]:
    """The events from the start of `turn` on (the thread's last turn, so up to its end)."""
    start = next(i for i, e in enumerate(events) if isinstance(e, ev.TurnStart) and e.turn == turn)
    return events[start:]


@pytest.mark.parametrize("case", _cases(), ids=str)
async def test_a_stream_cut_off_anywhere_is_kept_marked_and_the_thread_goes_on(
    case: Case, shared_server: ScriptedServer, home: Path
) -> None:
    server = shared_server
    config = _config(server)
    prompt = f"prompt {case.index}: {case.point}"
    runtime = Runtime.open(config, home, model=client_for(server))
    try:
        thread_id = runtime.thread.id
        if case.warm_up:
            server.script(s.text(f"a whole answer {case.index}"))
            assert (await _turn(runtime, f"warm-up {case.index}")).status == "ok"
        server.script(case.reply)
        end = await _turn(runtime, prompt)

        # The turn ended as a cut-off, and nothing is left running or waiting.
        assert end.status == "error" and end.reason == "cut_off", end
        assert end.error is not None and end.error.startswith(CUT_OFF)
        assert runtime.driver.running_turn is None and runtime.driver.inbox == []
        events = _this_turn(runtime.thread.log.events, end.turn or 0)
        replies = of_kind(events, ev.AssistantMessage)
        if case.sent.strip():
            assert [(r.content, r.calls, r.interrupted) for r in replies] == [(case.sent, (), True)]
        else:
            assert replies == []
        assert of_kind(events, ev.ToolResult) == []  # half a call is never run
        sent = of_kind(events, ev.UserMessage)[0]
        assert end.withdrawn == (() if case.sent.strip() else (sent.seq,))
    finally:
        await runtime.aclose()

    # What is on disk says the same: one prompt, the partial reply marked.
    on_disk = read_events(runtime.thread.log.path).events
    assert [e.text for e in of_kind(on_disk, ev.UserMessage)].count(prompt) == 1
    kept = [r.content for r in of_kind(on_disk, ev.AssistantMessage) if r.interrupted]
    assert kept == ([case.sent] if case.sent.strip() else [])

    # The user comes back to the thread: it opens and takes another turn.
    reopened = Runtime.open(config, home, thread_id=thread_id, model=client_for(server))
    try:
        server.script(s.text(f"after the cut {case.index}"))
        after = await _turn(reopened, f"next {case.index}")
        assert after.status == "ok", after
        request = chat_messages(server.requests[-1])
        contents = [m.get("content") for m in request]
        if case.sent.strip():  # the kept partial follows its prompt into the conversation
            assert contents.count(prompt) == 1
            at = contents.index(prompt)
            assert request[at + 1] == {"role": "assistant", "content": case.sent}
            assert all("tool_calls" not in m for m in request[at:])
        else:  # nothing came back: the prompt was withdrawn, handed back to send again
            assert prompt not in contents
            assert all("tool_calls" not in m for m in request)
        assert request[-1] == {"role": "user", "content": f"next {case.index}"}
        assert of_kind(reopened.thread.log.events, ev.AssistantMessage)[-1].content == (
            f"after the cut {case.index}"
        )
    finally:
        await reopened.aclose()
    assert server.pending == 0


def test_the_cases_cover_every_point_and_both_framings() -> None:
    """The seeded draw is what the family claims: all four points, both ways to end a body,
    text kept and nothing to keep, cuts on new threads and on threads with history."""
    cases = _cases()
    assert len(cases) == CASES and cases == _cases()  # reproducible
    assert {c.point for c in cases} == set(POINTS)
    assert {c.reply.framing for c in cases} == {"chunked", "close"}
    assert {bool(c.sent.strip()) for c in cases if c.point == "mid-tool-arguments"} == {
        True,
        False,
    }
    assert {c.warm_up for c in cases} == {True, False}
    for case in cases:
        if case.point == "mid-word":
            assert case.sent[-1].isalpha()
        if case.point == "mid-tool-arguments":
            (_, args) = case.reply.calls[0]
            with pytest.raises(json.JSONDecodeError):
                json.loads(args)  # a prefix of the arguments, never the whole
