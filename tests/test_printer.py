"""The line printer under a live prompt: whole lines only, long paragraphs wrapped."""

from __future__ import annotations

import io

from cli.printer import StreamPrinter
from engine.events import AssistantMessage


def test_whole_lines_stream_a_line_at_a_time(monkeypatch):
    monkeypatch.setenv("COLUMNS", "31")
    out, err = io.StringIO(), io.StringIO()
    printer = StreamPrinter(out, err, whole_lines=True)
    for piece in ["one two three ", "four five six seven ", "eight\nnine"]:
        printer.on_delta(1, piece)
    # Nothing partial reaches the terminal: prompt-toolkit would draw it into the prompt line.
    assert out.getvalue() == "one two three four five six\nseven eight\n"
    printer.on_event(AssistantMessage(seq=9, tool_calls=[]))
    assert out.getvalue().endswith("seven eight\nnine\n")
    assert err.getvalue() == ""


def test_piped_output_is_written_as_it_arrives():
    out = io.StringIO()
    printer = StreamPrinter(out, io.StringIO())
    printer.on_delta(1, "par")
    assert out.getvalue() == "par"
