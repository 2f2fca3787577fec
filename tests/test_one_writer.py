"""One writer per thread: an OS lock for the writer's life; readers never need it.

Reported: two `trove --plain --thread T` fed at once wrote the same seqs and
left a thread that no longer loaded. Now the second writer is refused with
one line naming the holder (exit 1), the first one's log stays whole, and the
lock dies with its process (kill -9 included).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest

from engine import events as ev
from engine.log import LogWriteError, read_events
from engine.session import Thread
from engine.thread_lock import ThreadLockedError
from tests.cli_support import REPO, trove
from tests.support import of_kind


def _thread(env, tid: str = "shared") -> Thread:
    thread = Thread.create(env.home, "local", tid)
    thread.log.append(ev.UserMessage(text="the code is ZULU-9"))
    return thread


@pytest.mark.parametrize("front", [["--plain"], ["-p", "hello"]])
def test_a_second_writer_is_refused_in_one_line_and_changes_nothing(env, front):
    holder = _thread(env)
    try:
        before = holder.log.path.read_bytes()
        result = trove(*env.common, "--thread", "shared", *front, stdin="hello\n")
        assert result.returncode == 1
        assert result.stderr.count("\n") == 1
        assert f"pid {os.getpid()}" in result.stderr and "shared" in result.stderr
        assert "Traceback" not in result.stderr
        assert holder.log.path.read_bytes() == before
        # The holder goes on writing with the right seqs.
        holder.log.append(ev.UserMessage(text="still mine"))
    finally:
        holder.close()
    events = read_events(holder.log.path).events
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


def test_readers_never_need_the_lock(env):
    holder = _thread(env)
    try:
        assert trove(*env.common, "threads").returncode == 0
        found = trove(*env.common, "--thread", "shared", "history", "search", "ZULU-9")
        assert found.returncode == 0 and "ZULU-9" in found.stdout
        assert trove(*env.common, "--thread", "shared", "notes").returncode == 0
    finally:
        holder.close()


def test_two_writers_in_one_process_are_refused_too(env):
    holder = _thread(env)
    try:
        with pytest.raises(ThreadLockedError):
            Thread.resume(env.home, "local", "shared")
    finally:
        holder.close()
    Thread.resume(env.home, "local", "shared").close()  # free again once closed


def test_a_view_reads_but_refuses_to_write(env):
    holder = _thread(env)
    try:
        view = Thread.view(env.home, "local", "shared", "read-only view: someone has it")
        assert [e.text for e in of_kind(view.log.events, ev.UserMessage)] == ["the code is ZULU-9"]
        with pytest.raises(LogWriteError) as refused:
            view.log.append(ev.UserMessage(text="mine?"))
        assert str(refused.value) == "read-only view: someone has it"
        view.close()
    finally:
        holder.close()


async def test_the_lock_dies_with_a_killed_process(env):
    _thread(env).close()
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from engine.session import Thread\n"
        "t = Thread.resume(Path(sys.argv[1]), 'local', 'shared')\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        str(env.home),
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    assert await asyncio.wait_for(child.stdout.readline(), 30) == b"held\n"
    with pytest.raises(ThreadLockedError):
        Thread.resume(env.home, "local", "shared")
    child.send_signal(signal.SIGKILL)
    await child.wait()
    Thread.resume(env.home, "local", "shared").close()


async def test_two_plain_sessions_on_one_thread_leave_a_loadable_thread(env):
    """The reported race: while one session writes, a second is refused, whatever it is
    fed, and the first one's log stays whole."""
    _thread(env).close()
    args = ["-m", "tui.cli", *env.common, "--thread", "shared", "--plain"]
    from tests.cli_support import _clean_env

    first = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        cwd=REPO,
        env=_clean_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert first.stdin is not None and first.stdout is not None
    first.stdin.write(b"first prompt\n")
    await first.stdin.drain()
    assert b"first prompt" in await asyncio.wait_for(first.stdout.readline(), 30)
    second = await asyncio.to_thread(
        trove,
        *env.common,
        "--thread",
        "shared",
        "--plain",
        stdin="".join(f"prompt {i}\n" for i in range(5)),
    )
    assert second.returncode == 1 and "open in another Trove process" in second.stderr
    first.stdin.write(b"second prompt\n")
    first.stdin.close()
    await asyncio.wait_for(first.communicate(), 30)
    assert first.returncode == 0
    events = read_events(env.home / "users/local/threads/shared/session.jsonl").events
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    said = [e.text for e in of_kind(events, ev.UserMessage) if e.item_id is not None]
    assert said == ["first prompt", "second prompt"]
