"""The first minutes, end to end: `trove` in a subprocess against the scripted server.

A launch that sends nothing leaves nothing on disk; `history`/`notes` without
`--thread` search the most recent thread that has history and say which;
bad usage exits 2; `/exit` quits.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.log import read_events
from engine.threads.thread import Thread
from tests.cli_support import Env, trove


def _threads(home: Path) -> list[str]:
    root = home / "users" / "local" / "threads"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def test_a_launch_that_sends_nothing_leaves_no_thread(env: Env, server: ScriptedServer) -> None:
    assert trove("--plain", *env.common, stdin="").returncode == 0
    assert trove("--plain", *env.common, stdin="/threads\n/help\n").returncode == 0
    assert _threads(env.home) == []
    listing = trove("threads", *env.common)
    assert "no threads" in listing.stdout


def test_the_first_message_creates_the_thread(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("hi there"))
    result = trove("--plain", *env.common, stdin="/help\nhello\n")
    assert result.returncode == 0, result.stderr
    (thread,) = _threads(env.home)
    log = env.home / "users" / "local" / "threads" / thread / "session.jsonl"
    events = read_events(log).events
    # The command run before the thread existed is logged ahead of the first message.
    assert [type(e) for e in events[:3]] == [ev.CommandRun, ev.CommandDone, ev.InboxQueued]
    assert events[1].run == events[0].seq and events[0].name == "help"
    assert ev.UserMessage in [type(e) for e in events]


def test_history_and_notes_use_the_latest_thread_with_history_and_name_it(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("noted"))
    assert trove(*env.common, "-p", "the code is ZEBRA-4411").returncode == 0
    (with_history,) = _threads(env.home)
    # A newer thread with no history (what earlier versions left at every launch).
    Thread.create(env.home, "local", "29991231-235959-ffff").close()

    found = trove("history", "search", "ZEBRA-4411", *env.common)
    assert found.returncode == 0, found.stderr
    assert f"thread {with_history}" in found.stdout
    assert "ZEBRA-4411" in found.stdout

    missing = trove("history", "search", "NOTHING-LIKE-IT", *env.common)
    assert missing.returncode == 0, missing.stderr
    assert f"thread {with_history}" in missing.stdout and "no matches" in missing.stdout

    notes = trove("notes", *env.common)
    assert notes.returncode == 0, notes.stderr
    assert f"thread {with_history}" in notes.stdout

    # --json stays exactly the tool's JSON.
    as_json = trove("history", "search", "ZEBRA-4411", "--json", *env.common)
    assert json.loads(as_json.stdout)["results"]


def test_history_read_of_a_malformed_id_is_bad_usage(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("ok"))
    assert trove(*env.common, "-p", "something").returncode == 0
    result = trove("history", "read", "badid", *env.common)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "source id" in lines[0], result.stderr
    assert result.stdout == ""
    as_json = trove("history", "read", "badid", "--json", *env.common)
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["error"] == "invalid_arguments"


def test_exit_is_a_command_that_quits(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("one"))
    result = trove("--plain", *env.common, stdin="first\n/exit\nnever sent\n")
    assert result.returncode == 0, result.stderr
    assert "did you mean" not in result.stdout + result.stderr
    (thread,) = _threads(env.home)
    log = env.home / "users" / "local" / "threads" / thread / "session.jsonl"
    texts = [e.text for e in read_events(log).events if isinstance(e, ev.UserMessage)]
    assert texts == ["first"]
    assert len(server.requests) == 1


def _at_a_terminal(env: Env, keys: list[bytes], wait_for: list[bytes]) -> str:
    """`trove --plain` on a pseudo-terminal: each key sequence is typed once the output
    shows what it waits for; returns everything the terminal showed up to the exit."""
    import os
    import pty
    import select
    import subprocess
    import sys
    import termios

    from tests.cli_support import REPO, TIMEOUT, _clean_env

    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "--plain", *env.common],
        stdin=child,
        stdout=child,
        stderr=child,
        cwd=REPO,
        env={**_clean_env(), "TERM": "dumb"},
        close_fds=True,
    )
    os.close(child)
    seen = b""
    try:
        steps = list(zip(wait_for, keys, strict=True))
        quiet = 0.0
        while True:
            # Keys go in once the output shows the step's marker and the prompt reads
            # keys one by one (raw mode): typed earlier, the line editor drops them.
            if steps and steps[0][0] in seen and not termios.tcgetattr(main)[3] & termios.ICANON:
                os.write(main, steps.pop(0)[1])
            ready, _, _ = select.select([main], [], [], 0.05)
            if not ready:
                quiet += 0.05
                assert quiet < TIMEOUT, f"the terminal went quiet: {seen!r}"
                continue
            quiet = 0.0
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait(TIMEOUT) == 0, seen
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main)
    return seen.decode(errors="replace")


def test_quitting_the_repl_names_the_way_back(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("hi there"))
    shown = _at_a_terminal(env, [b"hello\r", b"\x04"], [b"\xe2\x80\xba ", b"hi there"])
    (thread,) = _threads(env.home)
    assert f"resume with: {sys.executable} -m cli.main --home {env.home} --thread {thread}" in shown


def test_quitting_the_repl_without_a_message_names_nothing(
    env: Env, server: ScriptedServer
) -> None:
    shown = _at_a_terminal(env, [b"\x04"], [b"\xe2\x80\xba "])
    assert "resume with" not in shown
    assert _threads(env.home) == []
