"""A frame of a streamed reply draws again only the rows its new text changed, and no
full garbage collection runs while it streams.

Textual keeps each widget's drawn lines; a reply that asked for a whole
repaint each frame had every row on screen drawn again (styles, filters)
though only its last rows moved. The reply marks the rows from the first one
that changed, and the rows it keeps must still be the rows a fresh draw gives.
Counts and contents, never times.
"""

from __future__ import annotations

import gc
import random

import pytest
from textual.geometry import Region
from textual.strip import Strip

from tests.tui.test_stream_cost import code_lines, frame
from tui import code_lexers
from tui.live import collection
from tui.typed import TypingApp
from tui.widgets.assistant_message import SPARE_ROWS, AssistantMessage

SIZE = (100, 40)

MIXED = (
    "Intro with `code` and **bold**.\n\n- one\n- two\n  - nested\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n"
    "```python\n"
    + "".join(code_lines(12))
    + "```\n\n"
    + " ".join(f"word{i}" for i in range(400))
    + "\n\n1. last\n2. list\n"
)


@pytest.fixture
def built() -> None:
    code_lexers.build(["python"])


def shown(message: AssistantMessage) -> list[Strip]:
    width, height = message.outer_size
    return message.render_lines(Region(0, 0, width, height))


async def test_a_frame_draws_again_only_the_rows_its_text_changed(monkeypatch, built) -> None:
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=SIZE) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        lines = list(code_lines(24))
        message.write("Here is the code:\n\n```python\n" + "".join(lines[:4]))
        await frame(message, pilot)
        rows: list[int] = []
        render_line = AssistantMessage.render_line

        def counting(self: AssistantMessage, y: int) -> Strip:
            rows.append(y)
            return render_line(self, y)

        monkeypatch.setattr(AssistantMessage, "render_line", counting)
        for line in lines[4:]:
            rows.clear()
            message.write(line)
            await frame(message, pilot)
            height = message.size.height
            # The lines lexed again (the last three) and their padding row, the new line,
            # the spare rows: not the whole reply on screen.
            assert len(set(rows)) <= 3 + 2 + SPARE_ROWS, (height, sorted(set(rows)))
        assert message.size.height > 3 + 2 + SPARE_ROWS + 10


@pytest.mark.parametrize("seed", range(4))
async def test_the_rows_kept_are_the_rows_a_fresh_draw_gives(built, seed: int) -> None:
    rng = random.Random(seed)
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=(80, 200)) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        at = 0
        while at < len(MIXED):
            step = rng.choice((1, 3, 10, 40, 200))
            message.write(MIXED[at : at + step])
            at += step
            await frame(message, pilot)
            kept = [strip.text for strip in shown(message)]
            message._styles_cache.clear()
            fresh = [strip.text for strip in shown(message)]
            assert kept == fresh, f"after {at} characters"


async def test_no_full_collection_while_a_reply_streams_and_thresholds_come_back() -> None:
    before = gc.get_threshold()
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=SIZE) as pilot:
        first, second = AssistantMessage(), AssistantMessage()
        await app.mount(first, second)
        assert not collection.holding()
        first.write("Streaming ")
        second.write("two at once ")
        assert collection.holding()
        assert gc.get_threshold()[2] == collection.OUT_OF_REACH
        assert gc.get_threshold()[:2] == before[:2]  # the young generations still collect
        await first.finish("Streaming ")
        assert collection.holding()  # the other reply still streams
        await second.remove()  # removed mid-stream: its hold ends with it
        await pilot.pause()
        assert not collection.holding()
        assert gc.get_threshold() == before
        await first.finish("Streaming ")  # a second end releases nothing more
        assert gc.get_threshold() == before
