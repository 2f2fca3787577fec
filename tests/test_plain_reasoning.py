"""A reasoning model in `--plain` and `-p` (issue 28, point 1): the terminal says it is
thinking as soon as it is, and how long it thought once the answer begins, on stderr;
the answer alone is on stdout. The thinking itself is in the log and `/export`."""

from __future__ import annotations

import io
import re

from cli.printer import StreamPrinter
from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine.events import AssistantMessage, TurnEnd
from engine.port import ReasoningDelta, ReplyDelta
from tests.cli_support import Env, trove
from tests.test_plain_tty import Terminal

THOUGHT = "Let me think about the sky. Rayleigh scattering."
SUMMED = r"\[thought for \d+(\.\d)?s \(48 chars\)\]"


def test_the_printer_says_thinking_then_how_long_and_prints_only_the_answer() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = StreamPrinter(out, err)
    printer.notify(ReasoningDelta(1, THOUGHT[:20]))
    assert err.getvalue() == "[thinking…]\n"
    printer.notify(ReasoningDelta(1, THOUGHT[20:]))
    printer.notify(ReplyDelta(1, "Blue."))
    printer.notify(ReplyDelta(1, " Mostly."))
    printer.on_event(AssistantMessage(content="Blue. Mostly.", reasoning=THOUGHT))
    assert out.getvalue() == "Blue. Mostly.\n"
    lines = err.getvalue().splitlines()
    assert lines[0] == "[thinking…]"
    assert re.fullmatch(SUMMED, lines[1]) and len(lines) == 2
    assert "Rayleigh" not in out.getvalue() + err.getvalue()


def test_thinking_that_never_reached_an_answer_is_summed_up_at_the_end() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = StreamPrinter(out, err)
    printer.notify(ReasoningDelta(1, THOUGHT))
    printer.on_event(AssistantMessage(content="", reasoning=THOUGHT, interrupted=True))
    printer.on_event(TurnEnd(turn=1, status="error", error="reply cut off"))
    lines = err.getvalue().splitlines()
    assert lines[0] == "[thinking…]" and re.fullmatch(SUMMED, lines[1])
    assert lines[2].startswith("error: reply cut off")
    assert out.getvalue() == ""


def test_oneshot_prints_only_the_answer_on_stdout(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("Blue.", reasoning=THOUGHT, reasoning_field="reasoning"))
    result = trove("-p", "why is the sky blue?", *env.common)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Blue.\n"
    assert re.search(r"\[thinking…\]\n" + SUMMED, result.stderr), result.stderr
    assert "Rayleigh" not in result.stderr


def test_plain_at_a_terminal_says_thinking_before_the_answer_comes(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("Blue, mostly.", reasoning=THOUGHT, hold="answer"))
    terminal = Terminal(env)
    try:
        terminal.wait_for(r"Ctrl-D quits")
        terminal.type("why is the sky blue?\r")
        terminal.wait_for(r"\[thinking…\]")  # while the server holds the answer back
        assert "thought for" not in terminal.seen
        since = terminal.mark()
        server.release()
        terminal.wait_for(SUMMED + r"[\s\S]*Blue, mostly\.", since=since)
    finally:
        terminal.close()
    assert "Rayleigh" not in terminal.seen
