"""`trove --plain` at a real terminal (a pty): replies stream as they arrive, and a line typed
while a reply runs is acknowledged with its place in the queue (issue 12, item 11)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from tests.cli_support import REPO, Env, _clean_env

LIMIT = 20.0
"""Seconds a wait for output may take before the test fails (a bound, never a delay)."""

LIVE = r"Ctrl-D quits[\s\S]*›"
"""The first prompt is drawn. From the banner on the terminal stays in raw mode, so a key typed
at any moment is the REPL's; before it trove is still starting and the keys are the line
discipline's (a Ctrl-C there is a SIGINT)."""

_CONTROLLING_TTY = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0);"
    " os.execv(sys.argv[1], sys.argv[1:])"
)
"""Run in trove's new session before trove itself: the pty becomes its controlling terminal,
as a terminal emulator's is, so a Ctrl-C the line discipline turns into SIGINT reaches trove
(a session without one would lose the key instead)."""

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


class Terminal:
    """`trove --plain` (or `trove` with `args`) on the slave side of a pty; the test reads
    and types on the master."""

    def __init__(self, env: Env, *args: str) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        environ = _clean_env() | {"TERM": "xterm", "COLUMNS": "100", "LINES": "30"}
        environ["PROMPT_TOOLKIT_NO_CPR"] = "1"
        command = [sys.executable, "-m", "cli.main", *(args or ("--plain",)), *env.common]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CONTROLLING_TTY, *command],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=REPO,
            env=environ,
            close_fds=True,
            start_new_session=True,
        )
        os.close(slave)
        self.seen = ""

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def in_raw_mode(self) -> bool:
        """The pty's line discipline is off (no echo, no line editing, no signals from keys),
        as a live prompt-toolkit prompt sets it; the master reports the terminal's modes."""
        return not termios.tcgetattr(self.master)[3] & (termios.ICANON | termios.ECHO)

    def mark(self) -> int:
        """Where the output read so far ends, for a `wait_for` that looks only after it."""
        return len(self.seen)

    def wait_for(self, pattern: str, *, since: int = 0) -> None:
        """Read until `pattern` (a regex) shows in the output after `since`, escapes
        stripped."""
        deadline = time.monotonic() + LIMIT
        while not re.search(pattern, _ANSI.sub("", self.seen[since:])):
            left = deadline - time.monotonic()
            if left <= 0:
                shown = _ANSI.sub("", self.seen[since:])
                raise AssertionError(f"never saw {pattern!r} in {shown!r}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536).decode(errors="replace")
                except OSError:
                    raise AssertionError(f"trove exited; output: {self.seen!r}") from None

    def wait_exit(self) -> int:
        """Read what trove writes until it exits (within LIMIT); its exit code."""
        deadline = time.monotonic() + LIMIT
        while self.proc.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                shown = _ANSI.sub("", self.seen)[-400:]
                raise AssertionError(f"trove did not exit; its output ends {shown!r}")
            ready, _, _ = select.select([self.master], [], [], min(left, 0.05))
            if ready:
                try:
                    self.seen += os.read(self.master, 65536).decode(errors="replace")
                except OSError:
                    break
        return self.proc.wait()

    def close(self) -> None:
        """Ctrl-D, reading what trove writes meanwhile: a child whose output nobody reads
        blocks on a full pty and never exits (a teardown that once waited out LIMIT).
        A second call does nothing."""
        if self.master < 0:
            return
        if self.proc.poll() is None:
            self.type("\x04")  # Ctrl-D quits
            deadline = time.monotonic() + LIMIT
            while self.proc.poll() is None and time.monotonic() < deadline:
                ready, _, _ = select.select([self.master], [], [], 0.05)
                if ready:
                    try:
                        self.seen += os.read(self.master, 65536).decode(errors="replace")
                    except OSError:
                        break
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
        os.close(self.master)
        self.master = -1


@pytest.fixture
def terminal(env: Env):
    term = Terminal(env)
    yield term
    term.close()


def test_plain_streams_a_reply_and_acknowledges_a_queued_line(
    terminal: Terminal, server: ScriptedServer
) -> None:
    # The first piece arrives, then the server holds the rest: it must show now, not at the end.
    server.script(s.text("Hello wor|ld, and the rest.", chunk_chars=9, hold=True), s.text("two"))
    terminal.wait_for(r"Ctrl-D quits")
    terminal.type("first question\r")
    terminal.wait_for(r"Hello wor")
    terminal.type("second question\r")
    terminal.wait_for(r"queued \(1\)")
    server.release()
    terminal.wait_for(r"Hello wor\|ld, and the rest\.")
    terminal.wait_for(r"two\n[\s\S]*›")  # a live prompt reads the teardown's Ctrl-D


def test_plain_rewind_puts_the_prompt_back_in_the_input_line(
    terminal: Terminal, server: ScriptedServer
) -> None:
    server.script(s.text("Answer one."), s.text("Answer again."))
    terminal.wait_for(r"Ctrl-D quits")
    terminal.type("first question\r")
    terminal.wait_for(r"Answer one\.")
    terminal.type("/rewind 1\r")
    terminal.wait_for(r"in the input, ready to edit and send")
    terminal.type(", edited\r")  # typed after the prefilled text, then sent
    terminal.wait_for(r"Answer again\.\n[\s\S]*›")
    users = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"]
    assert users[-1] == "first question, edited"
    assert "first question" not in users[:-1]  # the rewound prompt is not in the history


def test_plain_puts_a_kept_draft_in_the_input_line(env: Env, server: ScriptedServer) -> None:
    """A prompt the TUI kept unsent at quit (engine.threads.draft) is in `--plain`'s first input
    line, ready to finish and send; once sent, quitting clears it from the thread."""
    from engine import events as ev
    from engine.threads.draft import current_draft
    from engine.threads.thread import Thread

    thread = Thread.create(env.home, "local", "t-draft")
    thread.log.append(ev.UserMessage(text="hello"))
    thread.log.append(ev.PromptDraft(text="half a thought"))
    thread.close()
    server.script(s.text("Whole now."))
    term = Terminal(env, "--plain", "--thread", "t-draft")
    try:
        term.wait_for(r"Ctrl-D quits")
        term.wait_for(r"› half a thought")
        term.type(" made whole\r")
        term.wait_for(r"Whole now\.\n[\s\S]*›")  # the next prompt is live: Ctrl-D is read
    finally:
        term.close()
    users = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"]
    assert users[-1] == "half a thought made whole"
    view = Thread.view(env.home, "local", "t-draft", "read by the test")
    try:
        assert current_draft(view.log) == ""
    finally:
        view.close()


def _last_prompt(request: dict) -> str:
    return [m["content"] for m in request["messages"] if m["role"] == "user"][-1]


def test_plain_ctrl_c_clears_the_line_and_up_brings_it_back(
    env: Env, terminal: Terminal, server: ScriptedServer
) -> None:
    """As in the app: Ctrl-C on a line with text (nothing running) empties it without
    sending it, and Up recalls it; a cleared line is kept for the session, not on disk."""
    server.script(s.text("Answer."))
    terminal.wait_for(LIVE)
    terminal.type("draft to drop")
    terminal.wait_for(r"draft to drop")
    mark = terminal.mark()
    terminal.type("\x03")
    terminal.wait_for(r"line cleared: Up brings it back\)\n[\s\S]*›", since=mark)
    mark = terminal.mark()
    terminal.type("\x1b[A")  # Up
    terminal.wait_for(r"draft to drop", since=mark)
    terminal.type("\r")
    terminal.wait_for(r"Answer\.\n[\s\S]*›")  # drawn by a live prompt (or just before one)
    assert [_last_prompt(request) for request in server.requests] == ["draft to drop"]
    mark = terminal.mark()
    terminal.type("never sent")
    terminal.wait_for(r"never sent", since=mark)
    terminal.type("\x03")
    terminal.wait_for(r"line cleared: Up brings it back", since=mark)
    terminal.close()
    assert terminal.proc.returncode == 0
    assert len(server.requests) == 1
    history = (env.home / "prompt-history").read_text(encoding="utf-8")
    assert "draft to drop" in history and "never sent" not in history


def test_plain_ctrl_c_on_an_empty_line_says_how_to_quit(
    terminal: Terminal, server: ScriptedServer
) -> None:
    terminal.wait_for(LIVE)
    mark = terminal.mark()
    terminal.type("\x03")
    terminal.wait_for(r"\(nothing to cancel; Ctrl-D quits\)\n[\s\S]*›", since=mark)
    assert "Up brings it back" not in terminal.seen
    assert terminal.proc.poll() is None, "Ctrl-C on an empty line does not quit"


def test_plain_ctrl_c_while_a_reply_runs_cancels_it_and_keeps_the_line(
    terminal: Terminal, server: ScriptedServer
) -> None:
    """As in the app: Ctrl-C stops the running reply first; what was typed meanwhile
    stays in the line, to send with Enter."""
    server.script(s.text("Partial and|the rest", chunk_chars=8, hold=True), s.text("Second."))
    terminal.wait_for(LIVE)
    terminal.type("first\r")
    terminal.wait_for(r"Partial\n›")  # the reply's first line, above the live prompt
    terminal.type("next one")
    terminal.wait_for(r"next one")
    mark = terminal.mark()
    terminal.type("\x03")
    terminal.wait_for(r"cancelled: the partial reply is kept[\s\S]*› next one", since=mark)
    terminal.type("\r")
    terminal.wait_for(r"Second\.\n[\s\S]*›")
    assert [_last_prompt(request) for request in server.requests] == ["first", "next one"]
    server.release()


def test_prompt_flag_at_a_terminal_does_not_wait_for_stdin(
    env: Env, server: ScriptedServer
) -> None:
    """`-p` with stdin a terminal sends just the question: a script run at a terminal
    must not wait for typing."""
    server.script(s.text("At once."))
    term = Terminal(env, "-p", "asked at a terminal")
    try:
        term.wait_for(r"At once\.")
        assert term.proc.wait(timeout=LIMIT) == 0
    finally:
        term.close()
    assert [_last_prompt(request) for request in server.requests] == ["asked at a terminal"]


def test_plain_gives_a_failed_prompt_back_and_sends_it_once(
    terminal: Terminal, server: ScriptedServer
) -> None:
    # Issue 25 item 4: the turn failed before any reply, so the prompt left the model's
    # history and is back in the input line; Enter sends it, and the model has it once.
    server.script(s.error(500, "the server is down"), s.text("the code is ZX-4471"))
    terminal.wait_for(r"Ctrl-D quits")
    terminal.type("what is the code?\r")
    terminal.wait_for(r"the server is down")
    terminal.wait_for(r"the prompt is back in the input, Enter resends it")
    terminal.type("\r")
    terminal.wait_for(r"the code is ZX-4471")
    users = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"]
    assert [u for u in users if not u.startswith("[TASK-CONTINUITY")] == ["what is the code?"]


LONG_LINES = 3000
"""Lines of a reply far longer than a pty holds unread (about 70 KB on Linux): while the test
reads no further than its first line, trove is still writing it out."""


def _long_text() -> str:
    return "BEGIN\n" + "".join(
        f"line {i:04d} of a long reply {'.' * 60}\n" for i in range(LONG_LINES)
    )


LAST_LINE = rf"line {LONG_LINES - 1:04d} of a long reply"


def test_plain_keeps_text_typed_while_a_reply_is_printed_for_the_next_prompt(
    terminal: Terminal, server: ScriptedServer
) -> None:
    """Text typed while a reply is being written out stays raw input: not echoed into the
    reply, and whole and in order in the input line, sent only on Enter."""
    server.script(s.text(_long_text() + "Tail.", chunk_chars=len(_long_text()), hold=True))
    terminal.wait_for(LIVE)
    terminal.type("first\r")
    terminal.wait_for(r"BEGIN")  # trove is writing the rest out: the test reads no further
    assert terminal.in_raw_mode(), "the terminal left raw mode to print a reply"
    for part in ("zqxj, ", "typed while ", "it printed"):
        terminal.type(part)
    begin = terminal.mark()
    terminal.wait_for(LAST_LINE, since=begin)
    server.release()
    # The input line is drawn whole again below the reply's last line.
    terminal.wait_for(r"Tail\.\n[\s\S]*› zqxj, typed while it printed", since=begin)
    printed = _ANSI.sub("", terminal.seen[begin:])
    assert "zqxj" not in printed[: printed.index(LAST_LINE)], "typed text echoed in the reply"
    assert len(server.requests) == 1, "nothing is sent before Enter"
    terminal.type("\r")
    terminal.wait_for(r"echo: zqxj, typed while it printed\n[\s\S]*›", since=begin)
    assert [_last_prompt(request) for request in server.requests] == [
        "first",
        "zqxj, typed while it printed",
    ]


def test_plain_ctrl_c_right_after_enter_cancels_the_reply_and_keeps_the_line(
    terminal: Terminal, server: ScriptedServer
) -> None:
    """Enter and then Ctrl-C, typed while a reply is written out (before the next prompt is
    drawn): the line is sent (queued behind the reply), Ctrl-C cancels the running reply,
    the reply printed so far stays on the screen, and the REPL goes on. Neither key is the
    line discipline's: no SIGINT (exit 130), no flushed input or output."""
    server.script(
        s.text(_long_text() + "never shown", chunk_chars=len(_long_text()), hold=True),
        s.text("Second."),
    )
    terminal.wait_for(LIVE)
    terminal.type("first\r")
    terminal.wait_for(r"BEGIN")  # trove is writing the rest out
    terminal.type("second\r")
    terminal.type("\x03")
    begin = terminal.mark()
    terminal.wait_for(r"cancelled: the partial reply is kept", since=begin)
    terminal.wait_for(r"Second\.\n[\s\S]*›", since=begin)
    assert terminal.proc.poll() is None, "Ctrl-C ended trove"
    assert re.search(LAST_LINE, _ANSI.sub("", terminal.seen)), "printed output was dropped"
    assert [_last_prompt(request) for request in server.requests] == ["first", "second"]
    assert "never shown" not in terminal.seen
    terminal.close()
    assert terminal.proc.returncode == 0


def test_plain_ctrl_d_right_after_a_reply_quits(terminal: Terminal, server: ScriptedServer) -> None:
    """Ctrl-D typed as a reply ends, while its last lines are still being written out,
    quits (0) with the resume line: the key is not lost."""
    server.script(s.text(_long_text() + "The end.", chunk_chars=len(_long_text())))
    terminal.wait_for(LIVE)
    terminal.type("first\r")
    terminal.wait_for(r"BEGIN")
    terminal.type("\x04")
    assert terminal.wait_exit() == 0
    assert re.search(r"resume with: .* -m cli\.main .*--thread \S+", _ANSI.sub("", terminal.seen))
    assert not terminal.in_raw_mode(), "the terminal is given back with its line discipline"


def test_plain_up_right_after_enter_recalls_the_prompt_just_sent(
    terminal: Terminal, server: ScriptedServer
) -> None:
    """Up typed with Enter (before the next prompt is drawn) brings back the prompt just
    sent, as it would a moment later."""
    terminal.wait_for(LIVE)
    mark = terminal.mark()
    terminal.type("ask me again\r\x1b[A")
    # Printed above the next prompt, which then shows the line Up brought back.
    terminal.wait_for(r"echo: ask me again\n[\s\S]*› ask me again", since=mark)
    terminal.type("\r")
    terminal.wait_for(r"echo: ask me again\n[\s\S]*echo: ask me again\n[\s\S]*›", since=mark)
    assert [_last_prompt(request) for request in server.requests] == ["ask me again"] * 2
