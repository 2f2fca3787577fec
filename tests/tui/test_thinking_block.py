"""A reasoning model's thinking in the app (issue 28, point 1): a collapsed "thinking…"
block above the answer, with its length and time, that expands like a tool block; live,
replayed, and at a bounded cost while collapsed however long the thinking grows."""

from __future__ import annotations

import re
from typing import Any

import pytest
from textual.pilot import Pilot

from devtools import scripted_server as s
from engine import events as ev
from tests.support import of_kind
from tests.tui.conftest import settle, until
from tests.tui.test_stream_cost import Work
from tests.tui.test_terminal_safety import screen_text
from tui.typed import TypingApp
from tui.widgets.assistant_message import AssistantMessage
from tui.widgets.chat_message import Notice, PastReply
from tui.widgets.thinking_block import ThinkingBlock

SIZE = (100, 36)
THOUGHT = (
    "The user asks why the sky is blue. Rayleigh scattering goes as the inverse fourth"
    " power of the wavelength, so blue light scatters far more than red."
)
ANSWER = "Because air scatters blue light more than red."


def flat(pilot: Pilot[Any]) -> str:
    return " ".join(screen_text(pilot).split())


async def toggle(pilot: Pilot[Any], block: ThinkingBlock) -> None:
    """As a user does it: focus on the block's title line, then Enter."""
    block.focus_title()
    await pilot.press("enter")
    await pilot.pause()
    block.scroll_visible(animate=False)
    await pilot.pause()


async def _ask(app: Any, pilot: Pilot[Any], prompt: str = "why is the sky blue?") -> None:
    await settle(pilot)
    app.runtime.driver.send(prompt)


async def test_the_thinking_shows_collapsed_while_it_streams_then_the_answer_below(
    app_factory, server
):
    server.script(s.text(ANSWER, reasoning=THOUGHT, chunk_chars=8, hold=True))
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await _ask(app, pilot)
        await until(pilot, lambda: bool(app.query(ThinkingBlock)))
        block = app.query_one(ThinkingBlock)
        await until(pilot, lambda: "thinking… 8 chars" in flat(pilot))
        assert block.collapsed and block.size.height == 1
        assert "The user" not in flat(pilot)  # the thinking itself stays folded
        assert not app.query(AssistantMessage)
        server.release()
        await settle(pilot)
        shown = flat(pilot)
        assert re.search(rf"▶ thought for \d+\.\ds \({len(THOUGHT)} chars\)", shown), shown
        assert ANSWER in shown and "Rayleigh" not in shown
        reply = app.query_one(AssistantMessage)
        assert block.region.y < reply.region.y  # above the answer
        logged = of_kind(app.runtime.thread.log.events, ev.AssistantMessage)[0]
        assert block.title() == f"thought for {logged.reasoning_seconds}s ({len(THOUGHT)} chars)"
        await toggle(pilot, block)
        assert not block.collapsed
        shown = flat(pilot)
        assert "▼ thought for" in shown and "Rayleigh scattering goes as the inverse" in shown
        assert shown.index("Rayleigh") < shown.index(ANSWER)
        await toggle(pilot, block)
        assert block.collapsed and "Rayleigh" not in flat(pilot)
        await pilot.click(ThinkingBlock, offset=(4, 0))  # a click on its line, as a mouse
        await pilot.pause()
        assert not block.collapsed and "Rayleigh" in flat(pilot)


async def test_the_clock_stops_when_the_answer_begins(app_factory, server):
    server.script(s.text(ANSWER, reasoning=THOUGHT, hold="answer"))
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await _ask(app, pilot)
        await until(pilot, lambda: "thinking…" in flat(pilot))
        block = app.query_one(ThinkingBlock)
        await until(pilot, lambda: block.chars == len(THOUGHT))
        assert block.title().startswith("thinking…")
        server.release()
        await until(pilot, lambda: bool(app.query(AssistantMessage)))
        assert block.title().startswith("thought for")  # before the reply is even logged
        stopped = block.elapsed
        assert stopped is not None
        await settle(pilot)
        elapsed = block.elapsed
        assert elapsed is not None and elapsed <= stopped + 0.05  # the logged time


async def test_expanded_while_streaming_it_grows_and_the_answer_follows(app_factory, server):
    server.script(s.text(ANSWER, reasoning=THOUGHT, chunk_chars=40, hold=True))
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await _ask(app, pilot)
        await until(pilot, lambda: "thinking…" in flat(pilot))
        block = app.query_one(ThinkingBlock)
        await toggle(pilot, block)
        await until(pilot, lambda: THOUGHT[:30] in flat(pilot))
        assert block.streaming
        server.release()
        await settle(pilot)
        shown = flat(pilot)
        assert "blue light scatters far more than red." in shown and ANSWER in shown
        assert not block.streaming and not block.collapsed


async def test_a_resumed_thread_shows_the_same_collapsed_block(app_factory, server):
    server.script(s.text(ANSWER, reasoning=THOUGHT, reasoning_field="reasoning"))
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await _ask(app, pilot)
        await settle(pilot)
        live_title = app.query_one(ThinkingBlock).title()
        thread = app.runtime.thread.id
    again = app_factory()
    again.start_thread = thread
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        block = again.query_one(ThinkingBlock)
        assert block.collapsed and block.title() == live_title
        assert f"▶ {live_title}" in flat(pilot) and "Rayleigh" not in flat(pilot)
        reply = again.query_one(PastReply)
        assert block.region.y < reply.region.y
        await toggle(pilot, block)
        assert "Rayleigh scattering goes as the inverse" in flat(pilot)


async def test_thinking_cut_off_before_the_answer_stays_with_the_error(app_factory, server):
    server.script(s.cutoff(ANSWER, reasoning=THOUGHT, chunk_chars=10, cut=4))
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await _ask(app, pilot)
        await settle(pilot)
        block = app.query_one(ThinkingBlock)
        assert block.title().startswith("thought for") and block.chars == 30
        notices = [n.text for n in app.query(Notice)]
        assert any("reply cut off" in text for text in notices)
        assert not any("partial reply is kept" in text for text in notices)  # none was
        await toggle(pilot, block)
        assert THOUGHT[:30] in flat(pilot)


@pytest.mark.parametrize("expanded", [False, True])
async def test_a_frame_costs_what_it_adds_collapsed_or_expanded(monkeypatch, expanded) -> None:
    """Collapsed, no frame parses or draws the hidden text at all; expanded while it
    streams, a frame parses about the text it adds (tui.live), however long it grows."""
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=(100, 32)) as pilot:
        block = ThinkingBlock(live=True)
        await app.mount(block)
        if expanded:
            block.collapsed = False
        work = Work(monkeypatch)
        words = [f"word{i}" + ("\n\n" if i % 50 == 49 else " ") for i in range(10_000)]
        step = 40
        for at in range(0, len(words), step):
            delta = "".join(words[at : at + step])
            block.write(delta)
            block._draw()
            await pilot.pause(0)
            _, parsed, _ = work.take()
            if expanded:
                assert parsed <= 10 * len(delta) + 6000, f"frame after word {at + step}"
            else:
                assert parsed == 0, f"frame after word {at + step}"
        assert block.chars == len("".join(words))
        assert (block.size.height == 1) != expanded


async def test_a_thinking_without_a_recorded_time_says_only_its_length() -> None:
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=(100, 32)) as pilot:
        block = ThinkingBlock("hmm, a log written by hand", seconds=None)
        await app.mount(block)
        await pilot.pause()
        assert block.title() == "thought (26 chars)"


async def test_inline_think_tags_stream_into_the_same_block(app_factory, server):
    """`<think>…</think>` at the start of the content (a model served without a reasoning
    parser) is the same collapsed block, the closing tag split across deltas; the answer
    below holds none of it."""
    import dataclasses

    deltas = ("<think>\n" + THOUGHT[:40], THOUGHT[40:], "</thi", "nk>\n\n", ANSWER)
    server.script(dataclasses.replace(s.text("x", hold=True), pieces=deltas))
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await _ask(app, pilot)
        await until(pilot, lambda: bool(app.query(ThinkingBlock)))
        block = app.query_one(ThinkingBlock)
        assert block.collapsed and "think>" not in flat(pilot)
        server.release()
        await settle(pilot)
        shown = flat(pilot)
        assert re.search(rf"▶ thought for \d+\.\ds \({len(THOUGHT)} chars\)", shown), shown
        assert ANSWER in shown and "Rayleigh" not in shown and "think>" not in shown
        assert block.region.y < app.query_one(AssistantMessage).region.y
