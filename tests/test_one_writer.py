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
from engine.threads.lock import ThreadLockedError
from engine.threads.thread import Thread
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
        "from engine.threads.thread import Thread\n"
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
    args = ["-m", "cli.main", *env.common, "--thread", "shared", "--plain"]
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


_HOLDER = (
    "import sys\n"
    "from pathlib import Path\n"
    "from engine import events as ev\n"
    "from engine.threads.thread import Thread\n"
    "t = Thread.resume(Path(sys.argv[1]), 'local', 'shared')\n"
    "print('held', flush=True)\n"
    "for line in sys.stdin:\n"
    "    t.log.append(ev.UserMessage(text=line.strip()))\n"
    "    print('appended', flush=True)\n"
    "t.close()\n"
)


@pytest.mark.parametrize("what", ["deleted", "replaced"])
async def test_a_lock_file_deleted_or_replaced_under_its_holder_still_keeps_writers_out(
    env, what: str
) -> None:
    """Issue 30 item 1: a cleanup script or a sync tool deletes `session.lock` (or puts a
    new file in its place) while a writer runs; the next opener must still be refused,
    told who has the thread, and the log must keep one seq per line."""
    _thread(env).close()
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _HOLDER,
        str(env.home),
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert await asyncio.wait_for(child.stdout.readline(), 30) == b"held\n"
        lock = env.home / "users/local/threads/shared/session.lock"
        if what == "deleted":
            lock.unlink()
        else:
            spare = lock.with_name("spare")
            spare.write_text("1 elsewhere\n")  # a stale copy naming nobody who has it
            os.replace(spare, lock)
        with pytest.raises(ThreadLockedError) as refused:
            Thread.resume(env.home, "local", "shared")
        assert f"pid {child.pid}" in str(refused.value)
        plain = await asyncio.to_thread(
            trove, *env.common, "--thread", "shared", "--plain", stdin="intruder\n"
        )
        assert plain.returncode == 1 and plain.stderr.count("\n") == 1, plain.stderr
        assert f"pid {child.pid}" in plain.stderr and "open in another Trove process" in (
            plain.stderr
        )
        view = Thread.view(env.home, "local", "shared", "read-only view")
        assert [e.text for e in of_kind(view.log.events, ev.UserMessage)] == ["the code is ZULU-9"]
        view.close()
        child.stdin.write(b"still the only writer\n")
        await child.stdin.drain()
        assert await asyncio.wait_for(child.stdout.readline(), 30) == b"appended\n"
    finally:
        child.stdin.close()
        await asyncio.wait_for(child.wait(), 30)
    events = read_events(env.home / "users/local/threads/shared/session.jsonl").events
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    said = [e.text for e in of_kind(events, ev.UserMessage)]
    assert said == ["the code is ZULU-9", "still the only writer"]
    Thread.resume(env.home, "local", "shared").close()  # free once the holder is gone


def test_where_a_directory_cannot_be_locked_the_lock_file_still_is(env, monkeypatch) -> None:
    """NFS emulates flock with byte-range locks, which a directory's read-only descriptor
    cannot take (EBADF): the thread still opens, and a second writer is still refused."""
    import errno
    import stat

    from engine.threads import lock as thread_lock

    real = thread_lock._flock

    def no_directories(fd: int) -> bool:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EBADF, "Bad file descriptor")
        return real(fd)

    monkeypatch.setattr(thread_lock, "_flock", no_directories)
    holder = _thread(env)
    try:
        with pytest.raises(ThreadLockedError) as refused:
            Thread.resume(env.home, "local", "shared")
        assert f"pid {os.getpid()}" in str(refused.value)
    finally:
        holder.close()
    Thread.resume(env.home, "local", "shared").close()


def test_a_refusal_reads_only_the_head_of_a_lock_file_grown_huge(env, monkeypatch) -> None:
    """Where the lock file is the lock (NFS), a refused writer reads who holds it from the
    file: one extended in place to 4 GiB (a sparse extension) was read whole to find the
    pid at its head. Only its head is read now, and the holder is still named."""
    import errno
    import resource
    import stat

    from engine.threads import lock as thread_lock

    real = thread_lock._flock

    def no_directories(fd: int) -> bool:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EBADF, "Bad file descriptor")
        return real(fd)

    monkeypatch.setattr(thread_lock, "_flock", no_directories)
    holder = _thread(env)
    try:
        os.truncate(holder.dir / "session.lock", 4 << 30)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with pytest.raises(ThreadLockedError) as refused:
            Thread.resume(env.home, "local", "shared")
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        assert f"pid {os.getpid()}" in str(refused.value)
        assert grown < 64 * 1024, f"{grown} KiB more peak RSS"
    finally:
        holder.close()
