"""A streamed reply always ends showing its whole text.

Found by running the TUI suite 20 times: once in 14 runs the narrow-terminal
snapshot showed a reply without its last word. Two ways to lose the tail:
the reply can end in the same tick as its last delta (the stream pump is
cancelled before it ever ran, so nothing was rendered), and a MarkdownStream
stopped mid-append can apply a stale append after its final one. Every
interleaving is reached here by yielding 0-9 times between deltas and before
the end, so the test waits on nothing but the event loop's own order.
"""

from __future__ import annotations

import asyncio

from textual.app import App
from textual.widgets.markdown import MarkdownBlock

from tui.widgets.assistant_message import AssistantMessage

TEXT = "A reply that has to wrap on a narrow terminal, word by word."


def shown(message: AssistantMessage) -> str:
    """The text the widget's blocks would draw."""
    return " ".join(str(block._content.plain) for block in message.query(MarkdownBlock)).strip()


async def test_the_whole_reply_is_shown_however_the_end_interleaves_with_the_stream():
    app: App[None] = App()
    wrong = []
    async with app.run_test() as pilot:
        for between in range(4):
            for before_end in range(10):
                message = AssistantMessage()
                await app.mount(message)
                words = TEXT.split(" ")
                for index, word in enumerate(words):
                    message.write(word if index == len(words) - 1 else word + " ")
                    for _ in range(between):
                        await asyncio.sleep(0)
                for _ in range(before_end):
                    await asyncio.sleep(0)
                await message.finish(TEXT)
                await pilot.pause()
                if shown(message) != TEXT:
                    wrong.append((between, before_end, shown(message)))
                await message.remove()
    assert wrong == []


async def test_a_reply_drawn_by_frames_ends_whole_and_is_not_rendered_anew():
    """Frames draw the stream as it goes; the end appends only what no frame drew."""
    app: App[None] = App()
    async with app.run_test() as pilot:
        message = AssistantMessage()
        await app.mount(message)
        words = TEXT.split(" ")
        half = len(words) // 2
        message.write(" ".join(words[:half]) + " ")
        while not message.source:  # a frame drew the first half
            await pilot.pause()
        first_block = message.query(MarkdownBlock).first()
        message.write(" ".join(words[half:]))
        await message.finish(TEXT)
        await pilot.pause()
        assert shown(message) == TEXT
        assert message.query(MarkdownBlock).first() is first_block
