"""A frame of a streamed reply costs about the text it adds, however long the reply grows.

A 10,000-line code block and a 10,000-word paragraph are streamed into the
reply widget, a frame drawn by hand after each delta; per frame, the text
Pygments lexes, the code lines Rich draws and the Markdown markdown-it parses
are counted. Before, the open block was parsed, lexed and drawn whole each
frame, so each of these grew with the block (O(n^2) over the reply). Counts,
not times: they do not swing with the machine's load.

A live reply's first code block in a language whose Pygments lexer is not
built yet is drawn plain, the lexer is built in a worker thread, then the
block is highlighted, as the replayed path does.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from markdown_it import MarkdownIt
from pygments.lexer import RegexLexer  # type: ignore[import-untyped]
from rich.markdown import Markdown as RichMarkdown
from rich.syntax import Syntax
from textual.visual import Visual, visualize

from tests.tui.conftest import LIMIT, ROUNDS, until
from tui import code_lexers
from tui.typed import TypingApp
from tui.widgets.assistant_message import AssistantMessage

SIZE = (100, 32)


class Work:
    """What a frame did: characters lexed and parsed, code lines drawn by Rich."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lexed = self.parsed = self.drawn = 0
        self.lexed_on_loop = 0
        """Characters lexed on the UI loop."""
        lex = RegexLexer.get_tokens_unprocessed
        parse = MarkdownIt.parse
        highlight = Syntax.highlight

        def lexing(lexer: Any, text: str, *args: Any) -> Any:
            self.lexed += len(text)
            if threading.current_thread() is threading.main_thread():
                self.lexed_on_loop += len(text)
            return lex(lexer, text, *args)

        def parsing(md: Any, src: str, env: Any = None) -> Any:
            self.parsed += len(src)
            return parse(md, src, env)

        def drawing(syntax: Any, code: str, *args: Any) -> Any:
            self.drawn += code.count("\n") + 1
            return highlight(syntax, code, *args)

        monkeypatch.setattr(RegexLexer, "get_tokens_unprocessed", lexing)
        monkeypatch.setattr(MarkdownIt, "parse", parsing)
        monkeypatch.setattr(Syntax, "highlight", drawing)

    def take(self) -> tuple[int, int, int]:
        taken = (self.lexed, self.parsed, self.drawn)
        self.lexed = self.parsed = self.drawn = 0
        return taken


async def frame(message: AssistantMessage, pilot: Any) -> None:
    """Draw what was written, now (the frame's timer is taken out of the way), then the
    code lexed for it off the loop, until nothing written is left to show."""
    while True:
        if message._frame is not None:
            message._frame.stop()
            message._frame = None
        message._draw()
        while message._busy:  # until the frame reached the screen
            await pilot.pause(0)
        await lexed(message)
        if not message.lexing:
            return


async def lexed(message: AssistantMessage) -> None:
    """Until the worker's lexing job is back on the loop (a state wait: the loop turns
    without drawing, so the job's thread gets the interpreter)."""
    for _ in range(ROUNDS * 1000):
        if message._live is None or not message._live.lexing:
            return
        await asyncio.sleep(0)
    raise AssertionError("the lexing job never came back")


def code_lines(count: int) -> Iterator[str]:
    shapes = (
        "def function_{i}(alpha, beta={i}):",
        '    """Docstring of {i},',
        '    over two lines."""',
        "    total = alpha + beta * {i}  # a comment",
        "    name = 'value {i}' if total > {i} else \"other\"",
        "    return [name, {{'key': total}}]",
        "",
    )
    for i in range(count):
        yield shapes[i % len(shapes)].format(i=i) + "\n"


@pytest.fixture
def built() -> None:
    code_lexers.build(["python"])


async def test_a_long_code_block_costs_each_frame_the_lines_it_adds(monkeypatch, built) -> None:
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=SIZE) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        work = Work(monkeypatch)
        message.write("Here is the code:\n\n```python\n")
        await frame(message, pilot)
        lines = list(code_lines(10_000))
        step = 50
        for at in range(0, len(lines), step):
            delta = "".join(lines[at : at + step])
            message.write(delta)
            await frame(message, pilot)
            lexed, parsed, drawn = work.take()
            where = f"frame after line {at + step}"
            assert lexed <= 2 * len(delta) + 1000, where
            assert parsed <= 2 * len(delta) + 1000, where
            assert drawn <= SIZE[1], where
        # Only the text the block started with (none: one line break) was lexed on the loop.
        assert work.lexed_on_loop <= 1
        message.write("```\n\nDone.\n")
        await frame(message, pilot)
        monkeypatch.undo()
        live = message._live_at(message.size.width)
        # The intro, a blank row, the block (padding, a row per line, padding), a blank row,
        # the last words: every line is one row, however many were ever drawn.
        assert live.height == 1 + 1 + (1 + len(lines) + 1) + 1 + 1
        shown = [live.row(y).text.strip() for y in range(live.height - 6, live.height)]
        assert shown == [line.strip() for line in lines[-3:]] + ["", "", "Done."]
        assert live.row(2 + 5000).text.strip() == lines[4999].strip()  # drawn when asked


async def test_a_long_paragraph_costs_each_frame_the_words_it_adds(monkeypatch) -> None:
    words = [
        f"word{i} **bold** `code_{i}` [a link](http://x/{i})" if i % 25 == 0 else f"word{i}"
        for i in range(10_000)
    ]
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=SIZE) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        work = Work(monkeypatch)
        step = 40
        for at in range(0, len(words), step):
            delta = " ".join(words[at : at + step]) + " "
            message.write(delta)
            await frame(message, pilot)
            _, parsed, _ = work.take()
            assert parsed <= 10 * len(delta) + 6000, f"frame after word {at + step}"
        monkeypatch.undo()
        assert message.drawn == " ".join(words) + " "
        width, style = message.size.width, message.visual_style
        live = message._live_at(width)
        whole = Visual.to_strips(
            message, visualize(message, RichMarkdown(message.drawn)), width, None, style
        )
        assert [live.row(y) for y in range(live.height)] == whole


def drawn_whole(message: AssistantMessage) -> list[Any]:
    """The rows Rich draws for everything written, at once."""
    width, style = message.size.width, message.visual_style
    return Visual.to_strips(
        message, visualize(message, RichMarkdown(message.drawn)), width, None, style
    )


async def stream_items(
    message: AssistantMessage, pilot: Any, work: Work, items: list[str], step: int
) -> list[int]:
    """Write `items` `step` at a time, a frame after each; the frames whose Markdown
    parsed is more than the text they add allows (their item numbers)."""
    over = []
    for at in range(0, len(items), step):
        delta = "".join(items[at : at + step])
        message.write(delta)
        await frame(message, pilot)
        _, parsed, _ = work.take()
        if parsed > 10 * len(delta) + 6000:
            over.append(at + step)
    return over


async def stream_block(
    monkeypatch: pytest.MonkeyPatch, lead: str, pieces: list[str], step: int, *, stale: bool
) -> list[int]:
    """Write `lead`, then `pieces` `step` at a time, a frame after each, then a closing
    paragraph; give the frames that parsed more than their text allows (`stream_items`).
    At the end the rows are the whole reply's: kept as streamed, or, `stale`, drawn whole
    once the reply is finished."""
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=SIZE) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        message.write(lead)
        await frame(message, pilot)
        work = Work(monkeypatch)
        over = await stream_items(message, pilot, work, pieces, step)
        message.write("\nAnd after it, **a paragraph**.\n")
        await frame(message, pilot)
        monkeypatch.undo()
        live = message._live_at(message.size.width)
        whole = drawn_whole(message)
        assert live.stale is stale
        if stale:
            await message.finish(message.drawn)
            assert message._drawn_lines is not None and message._drawn_lines[1] == whole
        else:
            assert [live.row(y) for y in range(live.height)] == whole
    return over


@pytest.mark.parametrize(
    "item",
    [
        "- item {i} with `code {i}`, **bold** and a [link](http://x/{i}) to wrap past the "
        "width of one row of the transcript\n",
        "{n}. step {i}: do the thing *now*\n",
        "* point {i}\n  - nested {i}\n",
        "1. numbered one {i}, as many lists are\n",
    ],
    ids=["bullets", "numbered", "nested", "all-ones"],
)
async def test_a_long_list_costs_each_frame_the_items_it_adds(monkeypatch, item) -> None:
    """Before, the open list was parsed and drawn whole each frame. A numbered list's
    1,200 items cross the widths of 10 and 100: the kept items are drawn again with the
    wider number, once each (those frames may parse the whole list)."""
    items = [item.format(i=i, n=i + 1) for i in range(1200)]
    # A numbered list's 1,000th item widens its numbers over a thousand kept rows: they
    # stay as drawn (no frame draws them all again), and the reply is drawn whole at
    # its end instead of keeping its streamed rows.
    numbered = not item.startswith(("-", "*"))
    over = await stream_block(monkeypatch, "The list:\n\n", items, 20, stale=numbered)
    assert len(over) <= 2, over


@pytest.mark.parametrize(
    "items",
    [
        ["1. same number {i}\n" for _ in range(1)],  # numbered "1." throughout
        ["- loose {i}\n\n"],
        ["- with code {i}:\n\n  ```python\n  x = {i}\n  ```\n"],
    ],
    ids=["all-ones", "loose", "code-in-items"],
)
async def test_a_long_list_streamed_shows_the_rows_rich_draws(monkeypatch, built, items) -> None:
    """Whatever cuts the list's items allow, its rows as streamed are the rows of the
    whole reply drawn at once (a list whose numbers are all "1." is numbered 1, 2, 3)."""
    written = [items[0].format(i=i) for i in range(300)]
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=SIZE) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        message.write("Intro.\n\n")
        work = Work(monkeypatch)
        await stream_items(message, pilot, work, written, 7)
        monkeypatch.undo()
        live = message._live_at(message.size.width)
        assert [live.row(y) for y in range(live.height)] == drawn_whole(message)


@pytest.mark.parametrize(
    "row",
    [
        "| {i} | name {i} | `code` and **bold** |\n",
        "| {d} | [docs](https://example.com/{d}/page) | steady |\n",
    ],
    ids=["numbered", "links"],
)
async def test_a_long_table_costs_each_frame_the_rows_it_adds(monkeypatch, row) -> None:
    """Before, the open table was parsed and drawn whole each frame. The numbered
    table's first column widens at rows 10, 100 and 1,000: the kept rows are drawn again
    at the new widths, once each, until drawing them would hold the loop; past that they
    stay as drawn and the reply is drawn whole at its end. A link's raw text widens its
    column while the link is open: every frame ends inside a row (inside its link)."""
    rows = [row.format(i=i, d=i % 10) for i in range(1200)]
    cut = max(row.find("example") + 3, len(row) // 2)
    pieces = [a[cut:] + b[:cut] for a, b in zip(["x" * cut, *rows], [*rows, ""], strict=True)]
    head = "The table:\n\n| # | what | more |\n|---|:---|---:|\n"
    over = await stream_block(monkeypatch, head, pieces, 20, stale="{i}" in row)
    assert len(over) <= 3, over


def colours(message: AssistantMessage, word: str) -> set[Any]:
    """The foreground colours of the drawn row holding `word`."""
    live = message._live_at(message.size.width)
    row = next(r for r in (live.row(y) for y in range(live.height)) if word in r.text)
    return {seg.style.color for seg in row if seg.text.strip() and seg.style is not None}


async def test_a_live_code_block_waits_plain_for_its_lexer_built_off_the_loop(monkeypatch) -> None:
    monkeypatch.setattr(code_lexers, "_built", {"text"})  # as in a fresh process
    gate = threading.Event()
    threads: list[bool] = []
    build = code_lexers.build

    def held(names: Any) -> None:
        threads.append(threading.current_thread() is threading.main_thread())
        assert gate.wait(LIMIT)
        build(names)

    monkeypatch.setattr(code_lexers, "build", held)
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=SIZE) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        message.write("Look:\n\n```python\ndef grow(x):\n    return x + 1\n")
        await frame(message, pilot)
        await until(pilot, lambda: bool(threads))
        assert threads == [False]  # built in a worker thread
        assert len(colours(message, "grow")) == 1  # plain meanwhile: no lexer ran on the loop
        message.write("\nprint(grow(2))\n```\n\nAnd a list:\n\n- ```python\n  x = 1\n  ```\n")
        await frame(message, pilot)
        assert len(colours(message, "print")) == 1
        gate.set()
        await until(pilot, lambda: len(colours(message, "grow")) > 1)
        assert len(colours(message, "print")) > 1  # `def`, the name, `return` … coloured
        assert len(colours(message, "x = 1")) > 1  # the block inside the list too
        assert "python" in code_lexers._built
        assert threads == [False]  # one build: the second block waited for the same one
