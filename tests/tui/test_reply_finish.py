"""A streamed reply always ends showing its whole text.

Found by running the TUI suite 20 times: once in 14 runs the narrow-terminal
snapshot showed a reply without its last word. Two ways to lose the tail:
the reply can end in the same tick as its last delta (before any frame drew
it), and a frame still being drawn can land after the final text. Every
interleaving is reached here by yielding 0-9 times between deltas and before
the end, so the test waits on nothing but the event loop's own order.
"""

from __future__ import annotations

import asyncio

import pytest
from textual.geometry import Region

from tui.live.reply import LiveReply
from tui.typed import TypingApp
from tui.widgets.assistant_message import FRAME_CHARS, FREEZE_CHARS, AssistantMessage

TEXT = "A reply that has to wrap on a narrow terminal, word by word."


def shown(message: AssistantMessage) -> str:
    """The words the finished widget draws on screen (it wraps them), one space apart."""
    width, height = message.outer_size  # its padding too: `size` would crop the lines
    lines = message.render_lines(Region(0, 0, width, height))
    return " ".join(" ".join(line.text for line in lines).split())


async def test_the_whole_reply_is_shown_however_the_end_interleaves_with_the_stream():
    app: TypingApp[None] = TypingApp()
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


async def test_a_reply_drawn_by_frames_ends_whole_as_one_widget():
    """Frames draw the stream in parts as it goes; the finished reply is one widget."""
    app: TypingApp[None] = TypingApp()
    async with app.run_test() as pilot:
        message = AssistantMessage()
        await app.mount(message)
        words = TEXT.split(" ")
        half = len(words) // 2
        message.write(" ".join(words[:half]) + " ")
        while not message.drawn:  # a frame drew the first half
            await pilot.pause()
        assert message.drawn == " ".join(words[:half]) + " "
        message.write(" ".join(words[half:]))
        await message.finish(TEXT)
        await pilot.pause()
        assert not message.children and not message.frozen_runs
        assert message.drawn == TEXT and shown(message) == TEXT


async def test_finished_blocks_are_frozen_and_only_the_open_tail_is_drawn_again():
    """A long reply streams into a few frozen runs, not one per block, never mounts a
    child, and ends as one widget."""
    paragraphs = [f"paragraph {i} " + "word " * 40 for i in range(60)]
    text = "\n\n".join(p.strip() for p in paragraphs)
    app: TypingApp[None] = TypingApp()
    async with app.run_test() as pilot:
        message = AssistantMessage()
        await app.mount(message)
        frozen_seen: list[int] = []
        for at in range(0, len(text), 200):  # a delta per frame, or about
            message.write(text[at : at + 200])
            await pilot.pause()
            frozen_seen.append(message.frozen_runs)
            assert not message.children
        while message.drawn != text:
            await pilot.pause()
        await pilot.pause()  # the layout after the last frame
        tail = message.open_text
        blocks = len(paragraphs)
        assert 1 < max(frozen_seen) <= len(text) // FREEZE_CHARS < blocks
        longest_block = max(len(p) for p in paragraphs)
        assert len(tail) < FREEZE_CHARS + longest_block
        assert text.endswith(tail)
        assert shown(message) == " ".join(text.split())  # every frozen run and the tail
        await message.finish(text)
        await pilot.pause()
        assert not message.children and message.text == text


async def test_a_frame_waits_while_keys_arrive_but_never_for_long():
    """Keys go first: a reply frame due while the user types is held back (the app's
    `typed_at`), but one held for `HOLD` already is drawn whatever the keys do."""
    import time

    app: TypingApp[None] = TypingApp()
    async with app.run_test() as pilot:
        message = AssistantMessage()
        await app.mount(message)

        def frame_by_hand() -> None:
            """Take the armed frame out of the timer's hands: this test calls it."""
            assert message._frame is not None
            message._frame.stop()
            message._frame = None

        message.write("first words ")
        frame_by_hand()
        app.typed_at = time.monotonic() + 3600  # a key "just now", however slow this machine
        message._draw()
        assert message.open_text == ""  # held: nothing drawn yet
        frame_by_hand()  # and the frame is armed again
        message._due = time.monotonic() - 1  # held since a second ago: long enough
        message._draw()
        assert message.open_text == "first words "
        while message._busy:  # the frame reaches the screen
            await pilot.pause()
        app.typed_at = 0.0  # nobody typing: the next frame is not held at all
        message.write("more ")
        frame_by_hand()
        message._draw()
        assert message.open_text == "first words more "


async def test_a_frame_held_for_keys_is_drawn_just_after_a_keys_echo():
    """A frame due while keys arrive waits for the next key's echo (the screen says it drew
    one: `echoed`) and is drawn right after it, where the next key is furthest off; one
    due just after an echo is drawn at once."""
    import time

    from tests.tui.conftest import until

    app: TypingApp[None] = TypingApp()
    async with app.run_test() as pilot:
        message = AssistantMessage()
        await app.mount(message)
        message.write("first words ")
        assert message._frame is not None
        message._frame.stop()
        app.typed_at = time.monotonic() + 3600  # a key just now, its echo not drawn yet
        message._due = time.monotonic() + 3600  # and no limit on the hold: only an echo
        message._draw()
        assert message._held and message.open_text == ""
        app.echoed()  # the screen drew the key's echo
        assert not message._held
        await until(pilot, lambda: message.open_text == "first words " and not message._busy)

        app.typed_at = time.monotonic()  # a key, and its echo drawn: the frame goes at once
        app.echoed_at = app.typed_at
        message.write("more ")
        assert message._frame is not None
        message._frame.stop()
        message._draw()
        assert not message._held and message.open_text == "first words more "


async def test_text_gathered_behind_a_frame_held_for_keys_is_read_as_it_comes():
    """While keys arrive a frame is held back, but the text a fast stream writes meanwhile
    is read as it gathers, `FRAME_CHARS` a turn, without asking for a draw: the held frame
    then reads one slice at most and draws everything read since the last frame."""
    import time

    from tests.tui.conftest import until

    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=(100, 30)) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        first = "".join(f"Line {i}.\n\n" for i in range(40))  # taller than the screen
        message.write(first)

        def laid_out() -> bool:
            live = message._live
            return live is not None and live.draw.width == message.size.width

        await until(pilot, lambda: not message._busy and message.drawn == first and laid_out())
        app.typed_at = time.monotonic() + 3600  # keys arriving all along
        read: list[int] = []
        draws: list[object] = []
        feed, refresh = LiveReply.feed, message.refresh

        def reading(reply: LiveReply, piece: str) -> None:
            read.append(len(piece))
            feed(reply, piece)

        def drawing(*regions: Region, **options: bool) -> AssistantMessage:
            draws.append(regions)
            return refresh(*regions, **options)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(LiveReply, "feed", reading)
            patch.setattr(message, "refresh", drawing)
            text = "".join(f"Paragraph {i}: {'words ' * 40}\n\n" for i in range(30))
            message.write(text)
            assert message._frame is not None
            message._frame.stop()
            message._draw()  # due: held for the keys
            assert message._held and message._frame is not None
            await until(pilot, lambda: message._pending_chars < FRAME_CHARS)
            assert message._held and draws == []  # read, not drawn: the frame is held
            assert len(read) >= 3 and all(n == FRAME_CHARS for n in read)
            app.typed_at = 0.0  # the keys stop: the held frame draws
            await until(pilot, lambda: message.drawn == first + text)
            assert draws and max(read) <= FRAME_CHARS
        await until(pilot, lambda: not message._busy)
        assert "Paragraph 29" in shown(message)


MIXED = (
    "Some **prose** with `code`, then a list:\n\n- one\n- two\n\n"
    + "```python\n"
    + "def f(x):\n    return x + 1  # more\n" * 30
    + "```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nThe end, in a last paragraph."
)


def _whole_lines(message: AssistantMessage, text: str) -> list[object]:
    """The lines a finished reply of `text` draws, rendered whole as a past reply's."""
    from rich.markdown import Markdown
    from textual.visual import Visual, visualize

    lines = Visual.to_strips(
        message,
        visualize(message, Markdown(text)),
        message.size.width,
        None,
        message.visual_style,
    )
    return [list(line) for line in lines]


@pytest.mark.parametrize(("rows_a_turn", "framed"), [(256, True), (7, True), (256, False)])
async def test_the_streamed_rows_become_the_finished_replys_lines(monkeypatch, rows_a_turn, framed):
    """When the rows streamed are the reply's (its text, every block lexed), the end keeps
    them: the reply is not parsed and rendered whole once more, and its lines are the
    lines that render would draw, however many turns of the loop taking them took, and
    when the reply ends before any frame drew it (its code lexed at once)."""
    from tui import code_lexers
    from tui.widgets import assistant_message

    monkeypatch.setattr(assistant_message, "ROWS_A_TURN", rows_a_turn)
    code_lexers.build({"python"})
    rendered_whole: list[str] = []
    monkeypatch.setattr(
        assistant_message, "_render_whole", lambda *a: rendered_whole.append("whole")
    )
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=(90, 40)) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        for at in range(0, len(MIXED), 37):
            message.write(MIXED[at : at + 37])
            await asyncio.sleep(0)
        while framed and not (message._streaming and message.drawn == MIXED):
            await pilot.pause()  # frames drew it all (none is in the end's way)
        await message.finish(MIXED)
        await pilot.pause()
        assert rendered_whole == []
        width = message.size.width
        kept = message._drawn_lines
        assert kept is not None and kept[0] == message._key(width)
        assert [list(line) for line in kept[1]] == _whole_lines(message, MIXED)
        assert shown(message) == " ".join(
            " ".join(line.text for line in message.render_lines(message.region)).split()
        )


async def test_a_reply_whose_log_text_differs_from_the_stream_is_rendered_whole():
    """The log's text wins (a torn or cleaned-up reply): the rows streamed are not its."""
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=(90, 40)) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        message.write("A reply as streamed, with a word too many.")
        while not message.drawn:
            await pilot.pause()
        await message.finish("A reply as logged.")
        await pilot.pause()
        assert shown(message) == "A reply as logged."


async def test_text_a_fast_stream_left_waiting_is_read_a_slice_a_frame_with_turns_between():
    """Behind a fast stream, frames read what waits `FRAME_CHARS` at a time, the next due
    at once, and the end reads what the frames had not: each slice its own frame with a
    turn of the loop between (a key pressed then echoes), never the whole backlog in one
    go; the finished reply shows the whole text."""
    app: TypingApp[None] = TypingApp()
    text = "".join(f"Paragraph {i}: {'words ' * 40}\n\n" for i in range(120))
    assert len(text) > 15 * FRAME_CHARS
    async with app.run_test(size=(100, 30)) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        turns = 0
        read: list[tuple[int, int]] = []  # (turns of the loop so far, characters read)
        feed = LiveReply.feed

        def reading(reply: LiveReply, piece: str) -> None:
            read.append((turns, len(piece)))
            feed(reply, piece)

        async def turning() -> None:
            nonlocal turns
            while True:
                await asyncio.sleep(0)
                turns += 1

        counter = asyncio.create_task(turning())
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(LiveReply, "feed", reading)
                half = len(text) // 2
                message.write(text[:half])
                while sum(n for _, n in read) < 5 * FRAME_CHARS:  # frames, behind
                    await pilot.pause()
                message.write(text[half:])
                await message.finish(text)
        finally:
            counter.cancel()
        await pilot.pause()
        assert all(n <= FRAME_CHARS for _, n in read)
        assert sum(n for _, n in read) == len(text)
        assert len({t for t, _ in read}) == len(read)  # the loop turned between any two
        assert message.drawn == text and shown(message) == " ".join(text.split())
