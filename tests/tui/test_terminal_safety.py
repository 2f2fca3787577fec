"""The Textual app never draws a control character or escape sequence from a model, a tool,
the archive, notes or a log: what every widget renders is checked segment by segment.

Rich and Textual strip only a few C0 controls (BEL, BS, VT, FF, CR) and pass ESC and C1
straight to the terminal, so the strips the compositor would write are what is asserted:
the live reply (sequences split across deltas), tool blocks, an error from the server,
the replayed thread and its checkpoint, the threads list, every inspector tab, and the
text Ctrl+Y copies.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.pilot import Pilot

from devtools import scripted_server as s
from engine import events as ev
from tests.support import of_kind
from tests.test_terminal_safety import (
    CLEAR,
    CLIPBOARD,
    CSI_8BIT,
    HOSTILE_PIECES,
    TITLE,
    UNSAFE,
    VISIBLE,
)
from tests.tui.conftest import say, settle, until
from tests.tui.test_inspector import idle, open_inspector
from tui.inspector.reader_tab import ReaderTab
from tui.inspector.search_tab import SearchTab
from tui.screens.threads import ThreadsScreen
from tui.widgets.prompt_input import PromptInput
from tui.widgets.tool_block import ToolBlock

SIZE = (120, 60)
CODE = "ZEBRA-4471"
PROMPT = f"{TITLE}The code is {CODE}{CSI_8BIT} keep it"
NOTE = f"note {CLIPBOARD}{CODE}{CSI_8BIT} done"


def screen_text(pilot: Pilot[Any]) -> str:
    """The text of every segment the terminal would be sent for the current screen."""
    strips = pilot.app.screen._compositor.render_strips()
    lines = []
    for strip in strips:
        lines.append("".join(segment.text for segment in strip if not segment.control))
    return "\n".join(lines)


def assert_screen_clean(pilot: Pilot[Any], *visible: str) -> str:
    text = screen_text(pilot)
    found = UNSAFE.search(text)
    assert found is None, f"control {found.group()!r} drawn: {text[found.start() - 40 :][:80]!r}"
    flat = " ".join(text.split())
    for words in visible:
        assert " ".join(words.split()) in flat, f"{words!r} not on screen"
    return text


async def send(pilot: Pilot[Any], text: str) -> None:
    """A prompt sent as the engine takes it (the input itself only holds safe text)."""
    pilot.app.runtime.driver.send(text)
    await settle(pilot)


async def test_live_reply_tools_and_errors_draw_no_escape(app_factory, server, monkeypatch):
    server.script(
        s.tool_calls([(f"task_note{TITLE}", f'{{"key": "k", "content": "{CLEAR}x{CSI_8BIT}"}}')]),
        # Held after its first delta, which ends inside the clipboard sequence.
        s.Reply(
            kind="text",
            pieces=(HOSTILE_PIECES[0] + HOSTILE_PIECES[1],) + HOSTILE_PIECES[2:],
            hold=True,
        ),
        s.error(400, f"bad request {TITLE}{CLEAR}{CSI_8BIT}here"),
    )
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.runtime.driver.send(PROMPT)
        await until(pilot, lambda: "Hello" in screen_text(pilot))
        assert_screen_clean(pilot, "Hello")  # mid-stream: the unfinished sequence is held back
        server.release()
        await settle(pilot)
        for block in app.query(ToolBlock):
            block.collapsed = False
        await pilot.pause()
        assert_screen_clean(pilot, f"The code is {CODE} keep it", VISIBLE, "⚙ task_note")
        with monkeypatch.context() as patch:  # only Textual's clipboard, not the machine's
            patch.setattr("shutil.which", lambda name: None)
            await say(pilot, "/copy")
        assert app.clipboard == VISIBLE  # what is copied is what is shown
        await send(pilot, "again")
        assert_screen_clean(pilot, "bad request here")


async def test_replayed_thread_and_checkpoint_draw_no_escape(app_factory, server):
    server.script(
        s.Reply(kind="text", pieces=HOSTILE_PIECES),
        s.text(f"second{CLEAR} answer"),
        s.text(f"Summary {TITLE}of the code{CSI_8BIT} talk."),
        s.text(f"after{TITLE} compaction"),
    )
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, PROMPT)
        await say(pilot, "second")
        await say(pilot, "/compact")
        await say(pilot, "third")
        assert_screen_clean(pilot, "Summary of the code talk.", "after compaction")
        thread = app.runtime.thread.id
    again = app_factory()
    again.start_thread = thread
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert of_kind(again.runtime.thread.log.events, ev.CompactEnd)
        assert_screen_clean(pilot, f"The code is {CODE} keep it", "Hello world and more 中文 ok")
        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(again.screen, ThreadsScreen))
        assert_screen_clean(pilot, "Threads — Enter opens", f"The code is {CODE} keep it")


async def test_every_inspector_tab_draws_no_escape(app_factory, server):
    server.script(
        s.Reply(kind="text", pieces=HOSTILE_PIECES),
        s.text("Second answer."),
        s.text(f"Summary {TITLE}without the code."),
        s.tool_calls([("task_note", {"key": "code", "content": NOTE})]),
        s.text("Noted."),
    )
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, PROMPT)
        await say(pilot, "second")
        await say(pilot, "/compact")
        await say(pilot, "note it")
        await open_inspector(pilot)
        assert_screen_clean(pilot, f"The code is {CODE} keep it")  # batches: source previews
        await pilot.press("f2")
        app.query_one(SearchTab).search(CODE)
        await idle(pilot)
        assert_screen_clean(pilot, f"The code is {CODE} keep it")
        user_hit = next(
            i for i, r in enumerate(app.query_one(SearchTab).results) if r["role"] == "user"
        )
        app.query_one("#search-results").highlighted = user_hit
        await pilot.press("enter")
        await idle(pilot)
        assert app.query_one(ReaderTab).page["text"] == PROMPT  # type: ignore[index]
        assert_screen_clean(pilot, f"The code is {CODE} keep it")
        await pilot.press("c")
        assert app.clipboard == f"The code is {CODE} keep it"
        await pilot.press("f2")  # Reader → Notes
        await idle(pilot)
        assert_screen_clean(pilot, f"note {CODE} done")


async def test_the_prompt_draws_no_escape_from_a_restored_or_pasted_prompt(app_factory, server):
    """A failed prompt comes back from the log into the input; a paste lands there too."""
    server.script(s.error(400, "no"))
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, PROMPT)
        prompt = app.query_one(PromptInput)
        assert prompt.text == f"The code is {CODE} keep it"  # back from the log, made safe
        assert_screen_clean(pilot, f"The code is {CODE} keep it")
        prompt.clear()
        paste = events.Paste(f"pasted{CLEAR} text{CSI_8BIT}\r\nline two")
        app.post_message(paste)  # to the app, as the driver delivers it
        await pilot.pause()
        assert prompt.text == "pasted text\nline two"
        assert_screen_clean(pilot, "pasted text")
