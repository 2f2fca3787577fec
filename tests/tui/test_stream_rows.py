"""A streamed reply's rows are the rows Rich draws for the text so far, however it arrives.

The reply being streamed keeps finished blocks, lexes and draws a code
block's lines about once each and keeps a long paragraph's finished rows
(tui.live). Each case here is streamed in deltas of random sizes, read by
frames at random points, and at every few frames (and at the end, and after
a change of width) the rows must equal, segment for segment, the rows of the
whole text drawn as a finished reply is (Rich's Markdown, one render).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from rich.markdown import Markdown as RichMarkdown
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widgets import Static

from tui import code_lexers
from tui.live.code import LiveCode
from tui.live.code_rows import CodeRows, Line, line_text
from tui.live.markdown import Draw
from tui.live.reply import LiveReply
from tui.typed import TypingApp
from tui.widgets.assistant_message import AssistantMessage

LANGUAGES = ("python", "py", "js", "c", "bash", "text")

PYTHON = (
    '''def grow(x):
    """Grow x.

    A docstring over lines, with "quotes" and a # that is no comment.
    """
    note = \'\'\'single-quoted
and multi-line\'\'\'
    s = "an \\\\"escaped\\\\" quote"  # a comment
    return x + 1  # one more


class Box:
    \'\'\'A class.\'\'\'

    def __init__(self):
\tself.tabbed = True
        self.very_long_line = "'''
    + "x" * 150
    + """"
"""
)

SHORT_CODE = (
    "def area(w, h):\n    # a comment\n    return w * h  # 'quoted' and \"double\"\n\n"
    "class Box:\n    size = 3.5\n    names = [b'x', None, True]\n"
)

CASES = {
    "python": "Here:\n\n```python\n" + PYTHON * 3 + "```\n\nAnd after it, a paragraph.\n",
    "open string": "Text\n\n```py\nx = '''abc\n\ndef f():\n    pass\n",
    "fences": (
        "~~~python\ndef f():\n    return '''doc\n    more'''\n~~~~\n\n"
        "  ```js\n  let a = `x\n    y`;\n   ```\nafter\n\n"
        "````c\n/* a\n   comment */\n```\nstill code\n````\n``` not a closing fence\n"
    ),
    "nested lists": (
        "1. one\n2. two\n   - a\n     - b\n       ```python\n       x = 1\n       ```\n"
        "   - c\n3. three\n\n> quoted\n> - item\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    ),
    "rules and html": "a\n\n---\n\nb\n\n<div>\nx\n</div>\n\nc\n\n***\n",
    "long paragraph": "Lead.\n\n"
    + " ".join(
        f"word{i} **bold {i}** `code_{i}` [link](http://x/{i}) snake_case_{i} 2 * {i}"
        if i % 9 == 0
        else f"word{i}"
        for i in range(900)
    )
    + "\n\nNext.\n",
    "paragraph that closes late": "**opened "
    + " ".join(f"w{i}" for i in range(700))
    + " closed** and `code "
    + " ".join(f"v{i}" for i in range(300))
    + " span` end.\n",
    "paragraph turned heading": " ".join(f"w{i}" for i in range(600)) + "\n===\n\nafter\n",
    "paragraph then table": " ".join(f"w{i}" for i in range(600)) + "\na | b\n--|--\n1 | 2\n",
    "plain paragraph": " ".join(f"w{i}" for i in range(2500)),
    "inline odds and ends": "```python\nx = 1\n```\n"
    + " ".join(
        (
            "an &copy; here",
            "<kbd>Ctrl</kbd>+<kbd>C</kbd>",
            "a hard  \nbreak",
            "&amp; &lt;entities&gt;",
            "in_word_underscores and *stars* and _under_",
            "wide 漢字テキスト cells",
            "a \\*escaped star",
            '<span class="a\nb">html</span>',
        )[i % 8]
        + f" filler{i}"
        for i in range(400)
    )
    + "\n- a list right after\n",
    "paragraph with an image": "Lead.\n\n"
    + " ".join(f"w{i}" + (" ![alt](i.png)" if i == 350 else "") for i in range(700))
    + "\n",
    "code with wide lines": "```python\n"
    + "\n".join(f"s{i} = '漢字' * {i}  # " + "漢" * (i % 60) for i in range(80))
    + "\n```\n",
    "long bullet list": "Lead.\n\n"
    + "".join(
        f"- item {i} **b{i}** `c{i}` "
        + "filler words " * (i % 9)
        + "\n"
        + (f"  - nested {i}\n    1. deeper\n" if i % 10 == 0 else "")
        for i in range(150)
    )
    + "\nAfter the list.\n",
    "long numbered list": "".join(
        f"{i + 1}. step {i} *em* " + "x " * (i % 40) + "\n" for i in range(130)
    )
    + "\nDone.\n",
    "list numbered ones": "".join(f"1. same number {i} and words\n" for i in range(200)),
    "list numbered anyhow": "7) first\n"
    + "".join(f"{(i * 37) % 1000}) item {i} with words\n" for i in range(150)),
    "loose list": "Intro\n\n"
    + "".join(f"- loose item {i} with some words\n\n" for i in range(150))
    + "tail paragraph\n",
    "list with code and lazy lines": "".join(
        f"- item {i}\nlazy continuation {i}\n"
        + (f"\n  ```python\n  x = {i}\n  ```\n" if i % 15 == 0 else "")
        for i in range(150)
    ),
    "long table": "Lead.\n\n| # | name | note |\n|---:|:---|:---:|\n"
    + "".join(f"| {i} | **n{i}** `c{i}` | " + "w " * (i % 7) + "|\n" for i in range(98))
    + "\nAfter the table.\n",
    "table wider than the reply": "| key | text | more |\n|---|---|---|\n"
    + "".join(
        f"| k{i} | "
        + " ".join(f"word{j}" for j in range(i % 23))
        + f" | m{i} "
        + "x" * (i % 5)
        + " |\n"
        for i in range(70)
    ),
    "table whose column widens": "| a | b |\n|---|---|\n"
    + "".join(
        f"| {i} | "
        + ("wider " * (i // 6) if i in (60, 85) else f"b{i} filler words that make it longer")
        + " |\n"
        for i in range(95)
    )
    + "\n---\n",
    "table of links": "| site | link |\n|---|---|\n"
    + "".join(
        f"| s{i} | [docs {i}](https://example.com/{'p' * (i % 50)}/{i}) |\n" for i in range(70)
    ),
    "ragged table": "Intro\n| a | b \\| c | d |\n| - | - | - |\n"
    + "".join(
        ("| only one |\n", "| x | y | z | extra |\n", "|  |  |  |\n", "| 漢字 | `p|q` | ~~s~~ |\n")[
            i % 4
        ]
        for i in range(120)
    )
    + "    indented after\n\n| t | u |\n|---|---|\n"
    + "| 1 | 2 |\n" * 90,
    "blocks of one language": "".join(
        f"Block {i}:\n\n```{('python', 'js', 'python')[i % 3]}\n{SHORT_CODE}```\n\n"
        for i in range(5)
    ),
    "list then other markers": "".join(f"- a{i} words words\n" for i in range(120))
    + "".join(f"* b{i} words\n" for i in range(120))
    + "+ c\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
}


class _Drawn(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("")


Whole = Callable[[str, int], list[Strip]]


@pytest.fixture(scope="module")
def languages() -> None:
    code_lexers.build(LANGUAGES)


@pytest.fixture
async def drawing(languages: None) -> Iterator[tuple[Callable[[int], Draw], Whole]]:
    app = _Drawn()
    async with app.run_test(size=(120, 40)):
        widget = app.query_one(Static)
        style = widget.visual_style

        def draw(width: int) -> Draw:
            def render(renderable: object) -> list[Strip]:
                return Visual.to_strips(widget, visualize(widget, renderable), width, None, style)

            return Draw(width, render, style)

        def whole(text: str, width: int) -> list[Strip]:
            return draw(width).render(RichMarkdown(text))

        yield draw, whole


def rows(reply: LiveReply) -> list[Strip]:
    return [reply.row(y) for y in range(reply.height)]


def first_difference(got: list[Strip], want: list[Strip]) -> str:
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        if a != b:
            return f"row {i}: {a.text!r} != {b.text!r}\n{list(a)}\n{list(b)}"
    return f"{len(got)} rows, not {len(want)}"


@pytest.mark.parametrize("name", list(CASES))
async def test_streamed_rows_are_the_whole_replys_rows(drawing, name: str) -> None:
    draw, whole = drawing
    text = CASES[name]
    for seed in range(3):
        rng = random.Random(seed)
        reply = LiveReply(draw(90))
        at = frames = 0
        while at < len(text):
            size = rng.choice((1, 2, 3, 5, 8, 13, 40, 120, 400))
            reply.feed(text[at : at + size])
            at += size
            if rng.random() < 0.4:
                reply.update()
                frames += 1
                if frames % 4 == 0 and not reply.stale:  # stale: a table's row is open
                    got, want = rows(reply), whole(text[:at], 90)
                    assert got == want, f"{name}, seed {seed}, at {at}: " + first_difference(
                        got, want
                    )
        reply.update()
        assert not reply.stale
        got, want = rows(reply), whole(text, 90)
        assert got == want, f"{name}, seed {seed}, at the end: " + first_difference(got, want)
        reply.resize(draw(57))
        got, want = rows(reply), whole(text, 57)
        assert got == want, f"{name}, seed {seed}, narrower: " + first_difference(got, want)


async def test_a_replys_later_code_blocks_compose_rows_from_what_its_first_taught(
    drawing, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rich draws a code line only while its token kinds' styles in a row are unknown (at
    the reply's width and style, in its theme): a second block in the same language
    draws none of its lines through Rich, and its rows are still the whole reply's."""
    draw, whole = drawing
    through_rich: list[str] = []
    original = CodeRows.draw

    def counted(self: CodeRows, line: Line) -> list[Strip]:
        through_rich.append(line_text(line))
        return original(self, line)

    monkeypatch.setattr(CodeRows, "draw", counted)
    first = f"One:\n\n```python\n{SHORT_CODE}```\n\n"
    text = first + f"Two:\n\n```python\n{SHORT_CODE}```\n"
    reply = LiveReply(draw(90))
    reply.feed(first)
    reply.update()
    assert rows(reply) == whole(first, 90)
    assert through_rich  # the first block's lines taught their kinds' styles
    through_rich.clear()
    reply.feed(text[len(first) :])
    reply.update()
    assert rows(reply) == whole(text, 90)
    assert through_rich == []


async def test_a_width_change_mid_stream_draws_the_rest_at_the_new_width(drawing) -> None:
    draw, whole = drawing
    text = CASES["python"] + CASES["long paragraph"]
    reply = LiveReply(draw(100))
    half = len(text) // 2
    for at in range(0, half, 37):
        reply.feed(text[at : min(at + 37, half)])
        reply.update()
    reply.resize(draw(64))
    assert rows(reply) == whole(text[:half], 64)
    for at in range(half, len(text), 37):
        reply.feed(text[at : at + 37])
        reply.update()
    assert rows(reply) == whole(text, 64)


def drawn(message: AssistantMessage) -> list[Strip]:
    width, height = message.outer_size
    return message.render_lines(Region(0, 0, width, height))


async def test_the_widget_draws_crlf_and_split_escapes_as_the_whole_safe_text(languages) -> None:
    """Deltas with CRLF line ends and escape sequences cut in two: the widget's rows are the
    rows of the whole text made terminal-safe, drawn as a finished reply is."""
    text = (
        "Intro with a \x1b[31mred\x1b[0m word.\r\n\r\n```python\r\n"
        + PYTHON.replace("\n", "\r\n")
        + "```\r\n\r\nEnd \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ done.\r\n"
    )
    app: TypingApp[None] = TypingApp()
    async with app.run_test(size=(100, 60)) as pilot:
        message = AssistantMessage()
        await app.mount(message)
        for at in range(0, len(text), 3):  # every escape sequence is cut somewhere
            message.write(text[at : at + 3])
            if at % 60 == 0:
                await pilot.pause()
        while message._pending or message._frame is not None or message._busy or message.lexing:
            await pilot.pause()
        await pilot.pause()
        safe = "Intro with a red word.\n\n```python\n" + PYTHON + "```\n\nEnd link done.\n"
        assert message.drawn == safe
        width = message.size.width
        assert [s.text for s in message.render_lines(Region(0, 0, width, message.size.height))]
        live = message._live_at(width)
        reference = Visual.to_strips(
            message, visualize(message, RichMarkdown(safe)), width, None, message.visual_style
        )
        assert rows(live) == reference


PIECES = (
    "```python\n", "```\n", "~~~\n", "````\n", "  ```js\n", "```bash\n", "def f(x):\n",
    "    return x  # c\n", '    """doc\n', '    end"""\n', "x = '''a\n", "b'''\n", "\n", "\n\n",
    "- item\n", "  - nested\n", "1. one\n", "> quote\n", "# Head\n", "Head\n===\n", "---\n",
    "| a | b |\n", "|---|---|\n", "| 1 | 2 |\n", "<div>\n", "</div>\n", "**bold ", "bold** ",
    "`code ", "span` ", "[link](http://x) ", "snake_case ", "2 * 3 ", "_em_ ", "*em* ", "~~s~~ ",
    "&amp; ", "\\* ", "![img](p.png) ", "<kbd>k</kbd> ", "a  \n", "tab\there ", "漢字 ",
    "x" * 120 + " ",
)  # fmt: skip


@pytest.mark.parametrize("seed", range(24))
async def test_random_replies_stream_as_they_draw_whole(drawing, seed: int) -> None:
    """Markdown of random pieces (fences opened and closed anyhow, lists, quotes, tables,
    inline syntax left open, long words), half of it plain words so that paragraphs grow
    long, streamed in random deltas at a random width."""
    draw, whole = drawing
    rng = random.Random(seed)
    pieces = [
        rng.choice(PIECES) if rng.random() < 0.5 else rng.choice(("word ", f"w{seed} ", "g()\n"))
        for _ in range(rng.randint(100, 400))
    ]
    text = "".join(pieces)
    width = rng.choice((30, 57, 90))
    reply = LiveReply(draw(width))
    at = frames = 0
    while at < len(text):
        size = rng.choice((1, 3, 7, 20, 80, 300))
        reply.feed(text[at : at + size])
        at += size
        if rng.random() < 0.5:
            reply.update()
            frames += 1
            if frames % 7 == 0:
                got, want = rows(reply), whole(text[:at], width)
                assert got == want, f"seed {seed}, at {at}: " + first_difference(got, want)
    reply.update()
    got, want = rows(reply), whole(text, width)
    assert got == want, f"seed {seed}, at the end: " + first_difference(got, want)


class Deferred:
    """Lexing jobs held back and run later, in the order sent, when the test says: the
    frames between see the lines lexed so far, as off the loop."""

    def __init__(self) -> None:
        self.jobs: list[tuple[Callable[[], Any], Callable[[Any], None]]] = []

    def submit(self, job: Callable[[], Any], done: Callable[[Any], None]) -> None:
        self.jobs.append((job, done))

    def run(self, count: int) -> None:
        for _ in range(min(count, len(self.jobs))):
            job, done = self.jobs.pop(0)
            done(job())

    def drain(self, reply: LiveReply) -> None:
        """Until the text fed is read and lexed, and the lines lexed are read."""
        reply.update()
        while self.jobs:
            self.run(len(self.jobs))
            reply.update()


@pytest.mark.parametrize("name", ["python", "open string", "fences", "code with wide lines"])
async def test_code_lexed_later_draws_as_the_whole_reply(drawing, name: str) -> None:
    """Jobs come back late and several frames apart (the block shows the lines lexed so
    far and never more), the fence closes while one is out, and the text after the block
    still lands under it: once the jobs are through, the rows are the whole reply's."""
    draw, whole = drawing
    text = CASES[name] + "\n\nA closing paragraph.\n"
    for seed in range(4):
        rng = random.Random(seed)
        lexing = Deferred()
        reply = LiveReply(draw(90), lexing)
        at = frames = 0
        while at < len(text):
            size = rng.choice((1, 5, 13, 40, 120, 400))
            reply.feed(text[at : at + size])
            at += size
            if rng.random() < 0.5:
                lexing.run(rng.choice((0, 0, 1, 2)))
                shown = reply.height
                reply.update()
                assert reply.height >= shown or not reply.lexing, f"seed {seed}, at {at}"
                frames += 1
                if frames % 5 == 0:
                    lexing.drain(reply)
                    got, want = rows(reply), whole(text[:at], 90)
                    assert got == want, f"{name}, seed {seed}, at {at}: " + first_difference(
                        got, want
                    )
        lexing.drain(reply)
        assert not reply.lexing
        got, want = rows(reply), whole(text, 90)
        assert got == want, f"{name}, seed {seed}, at the end: " + first_difference(got, want)


async def test_the_end_lexes_at_once_what_the_worker_has_not_given_back(drawing) -> None:
    """The reply ends while a job is out and more code waits behind it: `lex_now` lexes
    it all on the caller's turn, so the last frame shows the whole reply; the job that
    comes back late is dropped, and a block that starts after that is lexed at once."""
    draw, whole = drawing
    text = CASES["python"]
    lexing = Deferred()
    reply = LiveReply(draw(90), lexing)
    half = len(text) // 2
    reply.feed(text[:half])
    reply.update()
    assert lexing.jobs and reply.lexing  # the block's first job is out, not back
    reply.feed(text[half:])
    reply.update()
    assert rows(reply) != whole(text, 90)
    reply.lex_now()
    reply.update()
    assert not reply.lexing
    got, want = rows(reply), whole(text, 90)
    assert got == want, first_difference(got, want)
    lexing.run(len(lexing.jobs))  # the job sent before the end, back late: dropped
    assert not any(isinstance(part, LiveCode) and part.relexed for part in reply.parts)
    reply.update()
    assert rows(reply) == want
    more = text + "```js\nlet a = 1;\n"
    reply.feed("```js\nlet a = 1;\n")
    reply.update()
    assert not lexing.jobs and rows(reply) == whole(more, 90)


async def test_a_lexer_that_fails_leaves_its_lines_plain(drawing, monkeypatch) -> None:
    """Pygments raising inside a job (on the worker thread, or at once) draws the block's
    lines as plain text, as Rich draws a block in a language it does not know."""
    draw, whole = drawing

    def broken(lexer: Any, texts: list[str]) -> Any:
        raise RuntimeError("a lexer's own bug")

    monkeypatch.setattr("tui.live.code.lex", broken)
    lexing = Deferred()
    reply = LiveReply(draw(90), lexing)
    reply.feed("```python\ndef f(x):\n    return x\n")
    lexing.drain(reply)
    reply.feed("```\n")
    lexing.drain(reply)
    assert not reply.lexing
    got, want = rows(reply), whole("```text\ndef f(x):\n    return x\n```\n", 90)
    assert got == want, first_difference(got, want)
