"""The front door in a real terminal (issue 25 items 1 and 2): the bytes tmux sends for a
paste and for a burst of keys reach the prompt whole, wherever the focus was."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devtools import scripted_server as s
from tests.support import chat_messages
from tests.tui.terminal import Terminal, prompt_border, prompt_text, until

WELCOME = "Welcome to Trove"


@pytest.fixture
def terminal(env, server, tmp_path) -> Iterator[Terminal]:
    term = Terminal(env, tmp_path)
    try:
        term.wait_for(WELCOME)
        yield term
    finally:
        term.close()


def _sent(server) -> str:
    return chat_messages(server.requests[-1])[-1]["content"]


def _move_focus_off_the_prompt(terminal: Terminal) -> None:
    """Tab, then wait until the prompt is drawn unfocused (its border changes colour)."""
    focused = prompt_border(terminal.screen(styled=True))
    terminal.keys("Tab")
    terminal.wait(
        lambda shown: prompt_border(shown) != focused, "the prompt unfocused", styled=True
    )


def test_a_paste_with_cr_line_breaks_keeps_its_lines(terminal, server):
    server.script(s.text("got it"))
    terminal.paste("line one\nline two")
    terminal.wait(lambda shown: prompt_text(shown)[:2] == ["line one", "line two"], "two lines")
    terminal.keys("Enter")
    terminal.wait_for("got it")
    assert _sent(server) == "line one\nline two"


def test_a_burst_typed_after_tab_reaches_the_prompt_whole(terminal, server):
    server.script(s.text("burst received"))
    _move_focus_off_the_prompt(terminal)
    terminal.type("abc def")
    terminal.wait(lambda shown: prompt_text(shown)[0] == "abc def", "'abc def' in the prompt")
    terminal.keys("Enter")
    terminal.wait_for("burst received")
    assert _sent(server) == "abc def"


def test_a_paste_after_the_queue_empties_lands_in_the_prompt(terminal, server):
    server.script(s.text("first answer", hold="before"), s.text("queued answer"), s.text("ok"))
    terminal.type("first")
    terminal.keys("Enter")
    until(lambda: len(server.requests) == 1, "the first request")
    terminal.type("queued")
    terminal.keys("Enter")
    terminal.wait_for("[queued] queued")
    terminal.keys("Tab")  # the queue has the focus: its keys show in the footer
    terminal.wait_for("Remove")
    server.release()
    terminal.wait_for("queued answer")
    terminal.wait(lambda shown: "[queued]" not in shown, "the queue gone")
    terminal.paste("pasted after the queue went")
    terminal.wait(lambda shown: prompt_text(shown)[0] == "pasted after the queue went", "the paste")
    terminal.keys("Enter")
    until(lambda: len(server.requests) == 3, "the pasted prompt sent")
    assert _sent(server) == "pasted after the queue went"
