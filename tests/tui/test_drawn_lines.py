"""The newest replies' lines kept at quit draw the next open's first screen (tui.drawn_lines).

A kept reply is drawn from its lines without its Markdown ever being parsed,
and the screen is the one a cold open draws, cell for cell and style for
style. Lines that no longer fit (another width, another text under the same
seq, another renderer) and a file that is torn, oversized or hostile are not
used: the reply renders as it always did.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from rich.segment import Segment
from rich.style import Style

from devtools import scripted_server as s
from tests.tui.conftest import say, settle, until
from tui import drawn_lines
from tui.widgets.chat_message import PastReply

TID = "t-snapshot"
REPLIES = (
    "# Plan\n\nThe **log** is append-only, one line per event:\n\n"
    "- a `turn/start` opens a turn\n- a `turn/end` closes it\n\n"
    "```python\nfor event in log.events:\n    print(event.kind)\n```\n",
    "Compaction *replaces* a span with a checkpoint; the archive keeps the originals "
    "word for word, so `history_search` finds them again.\n\n1. select\n2. summarize\n",
)


def _kept_file(home: Path) -> Path:
    return home / "users" / "local" / "threads" / TID / drawn_lines.FILE_NAME


def _replies(app) -> list[PastReply]:
    return list(app.query(PastReply))


def _parsed(reply: PastReply) -> bool:
    return reply.content._markdown is not None


def _screen(app) -> list[list[Segment]]:
    """Every cell of the screen as drawn, with its style."""
    return [list(strip.simplify()) for strip in app.screen._compositor.render_strips()]


async def _chat_and_quit(app_factory, server, size=(100, 32)) -> None:
    server.script(*(s.text(reply) for reply in REPLIES))
    app = app_factory()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for prompt in ("how is the log kept", "and compaction"):
            await say(pilot, prompt)
        await pilot.press("ctrl+q")


async def _reopen(app_factory, size=(100, 32)):
    """Open the thread, note what its first screen showed, quit; returns (screen, replies
    parsed while the screen was drawn)."""
    app = app_factory()
    app.start_thread = TID
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        parsed = [_parsed(reply) for reply in _replies(app)]
        # A cold open draws code plain until its lexer is built off the loop (tui.code_lexers).
        await until(pilot, lambda: not any(reply.plain_code for reply in _replies(app)))
        await pilot.pause()
        screen = _screen(app)
        await pilot.press("ctrl+q")
    return screen, parsed


async def test_the_replies_drawn_at_quit_draw_the_next_first_screen_unparsed(
    app_factory, server, tmp_path
):
    home = tmp_path / "home"
    await _chat_and_quit(app_factory, server)
    kept = drawn_lines.load(_kept_file(home).parent)
    assert len(kept) == 2  # both replies, finished as they streamed

    warm, parsed = await _reopen(app_factory)
    assert parsed == [False, False]  # drawn from their kept lines: no Markdown parsed

    _kept_file(home).unlink()
    cold, parsed = await _reopen(app_factory)
    assert parsed == [True, True]
    assert warm == cold  # the same cells in the same styles


async def test_kept_lines_for_another_width_are_not_used(app_factory, server, tmp_path):
    home = tmp_path / "home"
    await _chat_and_quit(app_factory, server)
    warm, parsed = await _reopen(app_factory, size=(120, 32))
    assert parsed == [True, True]
    _kept_file(home).unlink()
    cold, _ = await _reopen(app_factory, size=(120, 32))
    assert warm == cold


async def test_kept_lines_of_another_text_or_renderer_are_not_used(app_factory, server, tmp_path):
    """The same seq with another digest (the thread was rewound and went on), or lines made
    by another version of the renderer: a miss, the reply is rendered."""
    path = _kept_file(tmp_path / "home")
    await _chat_and_quit(app_factory, server)
    data = json.loads(path.read_bytes())
    data["replies"][0]["digest"] = "0" * 32
    path.write_text(json.dumps(data))
    _, parsed = await _reopen(app_factory)
    assert parsed.count(True) == 1

    data = json.loads(path.read_bytes())
    data["renderer"] = "an older renderer"
    path.write_text(json.dumps(data))
    _, parsed = await _reopen(app_factory)
    assert parsed == [True, True]


async def test_a_hostile_kept_file_is_a_miss_never_an_escape(app_factory, server, tmp_path):
    """Kept lines are text for the terminal: an escape sequence in one drops that reply;
    a style that does not parse renders it instead; garbage is ignored."""
    home = tmp_path / "home"
    path = _kept_file(home)
    await _chat_and_quit(app_factory, server)
    data = json.loads(path.read_bytes())
    data["replies"][0]["lines"][0][0][0] = "\x1b]52;c;cHduZWQ=\x07owned"
    data["replies"][1]["lines"][0][0][1] = "bold not-a-colour-at-all"
    path.write_text(json.dumps(data))
    assert list(drawn_lines.load(path.parent)) == [data["replies"][1]["seq"]]
    screen, parsed = await _reopen(app_factory)
    assert parsed == [True, True]
    assert not any("\x1b" in segment.text for line in screen for segment in line)

    for garbage in (b"", b"{", b"[1, 2]", b'{"format": 1}', b"x" * (drawn_lines.MAX_BYTES + 1)):
        path.write_bytes(garbage)
        assert drawn_lines.load(path.parent) == {}
    _, parsed = await _reopen(app_factory)
    assert parsed == [True, True]


def test_lines_with_a_link_are_not_kept():
    """A link's hover highlight is keyed by an id made when its style is; kept lines would
    lose it, so a reply with a link is rendered each open."""
    linked = [[Segment("docs", Style.parse("underline link https://example.com"))]]
    assert drawn_lines.encode_lines([_strip(line) for line in linked]) is None
    plain = [[Segment("word", Style.parse("bold #e0e0e0 on #121212")), Segment(" ", None)]]
    encoded = drawn_lines.encode_lines([_strip(line) for line in plain])
    assert encoded == [[("word", "bold #e0e0e0 on #121212"), (" ", None)]]
    reply = drawn_lines.DrawnReply(1, drawn_lines.digest("word"), 5, "k", encoded)
    assert [list(strip) for strip in reply.strips()] == plain


def _strip(segments: list[Segment]):
    from textual.strip import Strip

    return Strip(segments)


async def test_a_read_only_view_keeps_no_lines(app_factory, held_thread, tmp_path):
    """The thread is another Trove's: its kept lines are that process's to write."""
    app = app_factory()
    app.start_thread = "t-held"
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert app.runtime.thread.read_only
        await pilot.press("ctrl+q")
    assert not (held_thread.dir / drawn_lines.FILE_NAME).exists()


async def test_every_reply_the_next_open_builds_first_is_kept(app_factory, server, tmp_path):
    """Not only those on screen at quit: the next open builds about a screen and a half of
    the newest events, by an estimate from their text, before its first frame; each
    reply it then had to render itself would load the Markdown parser. Wide (CJK) text
    takes twice the rows the estimate counts, so counting drawn rows is not enough."""
    wide = "上下文压缩会话日志搜索结果" * 7  # 91 characters, 182 cells: two rows each
    long_replies = [f"Reply {n}.\n\n" + "\n\n".join([wide] * 6) for n in range(6)]
    server.script(*(s.text(reply) for reply in long_replies))
    app = app_factory()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        for n in range(6):
            await say(pilot, f"question {n}")
        await pilot.press("ctrl+q")
    assert len(drawn_lines.load(_kept_file(tmp_path / "home").parent)) == 6

    again = app_factory()
    again.start_thread = TID
    async with again.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        replies = _replies(again)
        assert len(replies) == 6
        assert not any(_parsed(reply) for reply in replies)
        await pilot.press("ctrl+q")


def _load_within(thread_dir: Path, seconds: float = 10) -> dict[int, drawn_lines.DrawnReply]:
    """`drawn_lines.load` on a thread of its own, waited on for a bounded time: an open
    that blocks (on a FIFO) is released by opening the FIFO's other end, and fails."""
    found: list[dict[int, drawn_lines.DrawnReply]] = []
    reading = threading.Thread(target=lambda: found.append(drawn_lines.load(thread_dir)))
    reading.start()
    reading.join(seconds)
    if reading.is_alive():
        os.close(os.open(thread_dir / drawn_lines.FILE_NAME, os.O_WRONLY | os.O_NONBLOCK))
        reading.join()
        pytest.fail("reading the kept lines waited on a FIFO")
    return found[0]


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "huge", "garbled"])
async def test_kept_lines_that_are_not_a_file_of_ours_are_never_waited_on(
    app_factory, server, tmp_path, kind
):
    """Issue 30 point 3: a FIFO in the file's place is not waited on, a link is not
    followed, a huge file is not read; the replies render from the log, and the quit
    keeps their lines again in a file of its own."""
    path = _kept_file(tmp_path / "home")
    await _chat_and_quit(app_factory, server)
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "huge":
        path.write_bytes(b"{")
        os.truncate(path, 2 << 30)
    else:
        path.write_bytes(b'{"format": 1, "renderer": "\xff\xfe", "replies": [[[[')
    assert _load_within(path.parent) == {}
    _, parsed = await _reopen(app_factory)
    assert parsed == [True, True]
    assert path.is_file() and not path.is_symlink()
    assert len(drawn_lines.load(path.parent)) == 2


def test_a_link_in_place_of_the_temporary_copy_is_never_written_through(tmp_path):
    """The temporary copy has one known name: a link put there is replaced, not opened."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    (tmp_path / f".{drawn_lines.FILE_NAME}.tmp").symlink_to(victim)
    reply = drawn_lines.DrawnReply(1, drawn_lines.digest("word"), 5, "k", [[("word", None)]])
    drawn_lines.save(tmp_path, [reply])
    assert victim.read_bytes() == b"precious"
    assert list(drawn_lines.load(tmp_path)) == [1]
