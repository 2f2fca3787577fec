"""Acceptance for MCP tools in a real terminal: the scripted model calls a tool of a
real MCP server (tests/mcp_server.py); the screen shows the consent dialog, then the
call and its result, and nothing the server sent as escapes reaches the terminal."""

from __future__ import annotations

import sys
from pathlib import Path

from devtools import scripted_server as s
from tests.tui.terminal import Terminal

SERVER = str(Path(__file__).resolve().parent.parent / "mcp_server.py")


def test_the_model_calls_an_mcp_tool_after_consent(env, server, tmp_path):
    with env.config.open("a", encoding="utf-8") as f:
        f.write(
            "mcp:\n  servers:\n    test:\n"
            f"      command: {sys.executable}\n"
            f"      args: [{SERVER}]\n"
        )
    server.script(
        s.tool_calls([("add", {"a": 19, "b": 23})]),
        s.text("The server says nineteen and twenty-three make 42."),
        s.tool_calls([("hostile", {})]),
        s.text("That was hostile output."),
    )
    term = Terminal(env, tmp_path)
    try:
        term.wait_for("Welcome to Trove")
        term.type("add 19 and 23 with the tool")
        term.keys("Enter")
        dialog = term.wait_for("Run add from MCP server test?")
        assert '"a": 19' in dialog and "Allow once (o)" in dialog and "Deny (d)" in dialog
        term.keys("o")
        shown = term.wait_for("make 42.")
        assert "add" in shown and "42" in shown
        term.type("now the hostile one")
        term.keys("Enter")
        term.wait_for("Run hostile from MCP server test?")
        term.keys("t")
        styled = term.wait(lambda s_: "That was hostile output." in s_, "the reply", styled=True)
        assert "pwned" not in term.screen()  # the OSC title sequence is dropped whole
        assert "\x1b]0;" not in styled and "\x1b[2J" not in styled
    finally:
        term.close()
