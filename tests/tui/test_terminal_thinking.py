"""Issue 28's acceptance, in a real terminal: tmux runs `trove` against the scripted
server, a reasoning model's stream shows the thinking block (collapsed, with its length
and clock) while it thinks, then the answer below it; the keys expand it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from devtools import scripted_server as s
from tests.support import chat_messages
from tests.tui.terminal import Terminal, prompt_border

WELCOME = "Welcome to Trove"
THOUGHT = (
    "The user asks why the sky is blue. Rayleigh scattering: shorter wavelengths"
    " scatter more, so blue light fills the sky."
)
ANSWER = "Air scatters blue light more than red."


@pytest.fixture
def terminal(env, server, tmp_path) -> Iterator[Terminal]:
    term = Terminal(env, tmp_path)
    try:
        term.wait_for(WELCOME)
        yield term
    finally:
        term.close()


def _line_of(screen: str, text: str) -> int:
    return next(i for i, line in enumerate(screen.splitlines()) if text in line)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_a_reasoning_stream_shows_the_thinking_block_then_the_answer(terminal, server, field):
    server.script(s.text(ANSWER, reasoning=THOUGHT, reasoning_field=field, hold="answer"))
    terminal.type("why is the sky blue?")
    terminal.keys("Enter")
    # While the server holds the answer back, the block says the model is thinking.
    thinking = terminal.wait(
        lambda shown: f"▶ thinking… {len(THOUGHT)} chars" in shown, "the thinking block"
    )
    assert re.search(rf"▶ thinking… {len(THOUGHT)} chars · \d+s", thinking), thinking
    assert "Rayleigh" not in thinking and ANSWER not in thinking  # folded; no answer yet
    server.release()
    done = terminal.wait(lambda shown: ANSWER in shown, "the answer")
    done = terminal.wait(lambda shown: "▶ thought for" in shown, "the thinking's time")
    title = re.search(rf"▶ thought for \d+\.\ds \({len(THOUGHT)} chars\)", done)
    assert title, done
    assert _line_of(done, "▶ thought for") < _line_of(done, ANSWER)
    assert "Rayleigh" not in done
    # Shift+Tab from the prompt reaches the block (the last thing above it); Enter opens it.
    focused = prompt_border(terminal.screen(styled=True))
    terminal.keys("BTab")
    terminal.wait(
        lambda shown: prompt_border(shown) != focused, "the prompt unfocused", styled=True
    )
    terminal.keys("Enter")
    opened = terminal.wait(lambda shown: "▼ thought for" in shown, "the block expanded")
    opened = terminal.wait(lambda shown: "Rayleigh scattering" in shown, "the thinking")
    assert _line_of(opened, "▼ thought for") < _line_of(opened, "Rayleigh scattering")
    assert _line_of(opened, "Rayleigh scattering") < _line_of(opened, ANSWER)
    # The thinking was never sent back: ask again and look at the request.
    server.script(s.text("Sunsets are red."))
    terminal.type("and sunsets?")
    terminal.wait(lambda shown: "and sunsets?" in shown, "the second prompt typed")
    terminal.keys("Enter")
    terminal.wait_for("Sunsets are red.")
    sent = chat_messages(server.requests[-1])
    assert {"role": "assistant", "content": ANSWER} in sent
    assert "Rayleigh" not in str(sent)
