"""Issue 28, point 3 in `--plain` (at a terminal, and from a pipe) and `-p`: /retry, /edit,
/system and /copy are the engine's commands, so they work the same way there."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.log import read_events
from engine.log.line import current_line
from tests.cli_support import Env, trove
from tests.support import chat_messages
from tests.test_plain_tty import LIVE, Terminal


def _sent(request: dict) -> list[str]:
    return [m["content"] for m in chat_messages(request)]


def _only_thread(home: Path) -> list[ev.Event]:
    (log,) = (home / "users" / "local" / "threads").glob("*/session.jsonl")
    return read_events(log).events


def _replies_on_line(home: Path) -> list[str]:
    line = current_line(_only_thread(home))
    return [e.content or "" for e in line if isinstance(e, ev.AssistantMessage)]


# -- at a terminal -------------------------------------------------------------------------


def test_plain_edit_prefills_the_line_and_the_resend_replaces_the_exchange(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("Answer one."), s.text("Answer to the edit."))
    term = Terminal(env)
    try:
        term.wait_for(LIVE)
        term.type("first question\r")
        term.wait_for(r"Answer one\.\n[\s\S]*›")
        mark = term.mark()
        term.type("/edit\r")
        term.wait_for(r"editing your last prompt", since=mark)
        term.wait_for(r"› first question", since=mark)
        term.type(", edited\r")
        term.wait_for(r"Answer to the edit\.\n[\s\S]*›")
    finally:
        term.close()
    assert _sent(server.requests[-1]) == ["first question, edited"]
    assert _replies_on_line(env.home) == ["Answer to the edit."]
    everything = _only_thread(env.home)
    assert "Answer one." in [e.content for e in everything if isinstance(e, ev.AssistantMessage)]


def test_plain_ctrl_c_drops_an_edit_and_the_exchange_stays(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("Answer one."), s.text("Answer two."))
    term = Terminal(env)
    try:
        term.wait_for(LIVE)
        term.type("first question\r")
        term.wait_for(r"Answer one\.\n[\s\S]*›")
        mark = term.mark()
        term.type("/edit\r")
        term.wait_for(r"editing your last prompt", since=mark)
        term.wait_for(r"› first question", since=mark)
        mark = term.mark()
        term.type("\x03")
        term.wait_for(r"edit dropped: the last exchange is unchanged", since=mark)
        term.type("second question\r")
        term.wait_for(r"Answer two\.\n[\s\S]*›")
    finally:
        term.close()
    assert _sent(server.requests[-1]) == ["first question", "Answer one.", "second question"]


def test_plain_retry_streams_a_new_reply(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("First try."), s.text("Second try."))
    term = Terminal(env)
    try:
        term.wait_for(LIVE)
        term.type("question\r")
        term.wait_for(r"First try\.\n[\s\S]*›")
        mark = term.mark()
        term.type("/retry\r")
        term.wait_for(r"answering the last prompt again[\s\S]*Second try\.\n[\s\S]*›", since=mark)
    finally:
        term.close()
    assert _sent(server.requests[-1]) == ["question"]
    assert _replies_on_line(env.home) == ["Second try."]


def test_plain_copy_sends_osc_52_to_the_terminal(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("Use this:\n\n```sh\nls -la\n```\n"))
    term = Terminal(env)
    try:
        term.wait_for(LIVE)
        term.type("how?\r")
        term.wait_for(r"ls -la[\s\S]*›")
        term.type("/copy code\r")
        term.wait_for(r"its last code block")
        term.type("/copy\r")
        term.wait_for(r"Sent the last reply to the terminal's clipboard \(OSC 52\)|Copied the last")
    finally:
        term.close()
    code = base64.b64encode(b"ls -la").decode()
    whole = base64.b64encode(b"Use this:\n\n```sh\nls -la\n```\n").decode()
    assert f"\x1b]52;c;{code}\a" in term.seen
    assert f"\x1b]52;c;{whole}\a" in term.seen


# -- from a pipe, and -p -------------------------------------------------------------------


def test_piped_plain_retry_edit_and_system(env: Env, server: ScriptedServer) -> None:
    server.script(
        s.text("First try."), s.text("Second try."), s.text("Edited answer."), s.text("Arr.")
    )
    script = "question\n/retry\n/edit\nquestion, edited\n/system Talk like a pirate.\n/system\nhi\n"
    result = trove("--plain", *env.common, stdin=script)
    assert result.returncode == 0, result.stderr
    assert "answering the last prompt again" in result.stderr
    assert "the next line replaces it" in result.stdout and "It was:\nquestion" in result.stdout
    assert "System prompt (this thread's" in result.stdout
    assert [_sent(r)[-1] for r in server.requests] == [
        "question",
        "question",
        "question, edited",
        "hi",
    ]
    assert server.requests[-1]["messages"][0]["content"].startswith("Talk like a pirate.")
    assert _replies_on_line(env.home) == ["Edited answer.", "Arr."]


def test_oneshot_retry_prints_the_new_answer_and_edit_refuses(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("First try."), s.text("Second try."))
    first = trove("-p", "question", *env.common)
    assert first.returncode == 0, first.stderr
    again = trove("-c", "-p", "/retry", *env.common)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "Second try.\n"  # only the answer on stdout
    edit = trove("-c", "-p", "/edit", *env.common)
    assert edit.returncode == 1
    assert edit.stderr.strip().startswith("error: /edit needs an input line")
    assert len(edit.stderr.strip().splitlines()) == 1
    exported = trove("-c", "-p", "/export " + str(env.home / "t.json"), *env.common)
    assert exported.returncode == 0, exported.stderr
    events = json.loads((env.home / "t.json").read_text())["events"]
    assert [e["content"] for e in events if e["kind"] == "assistant/message"] == ["Second try."]
