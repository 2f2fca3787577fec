"""Private data stays private: data dirs 0700, files 0600, whatever the umask.

Every test runs under a forced umask of 022 (the usual default, under which
plain `mkdir`/`open` make 0755 directories and 0644 files).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import TaskContinuityConfig
from engine.continuity import ArchiveStore, Source, source_id
from engine.log import SessionLog
from engine.threads.paths import LOG_NAME, thread_dir
from engine.threads.thread import Thread
from engine.util.private import (
    open_derived,
    private_dir,
    read_derived,
    touch_private,
    write_derived,
)
from engine.workspace.fork import fork_thread
from tests.cli_support import Env, trove


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def assert_private_tree(root: Path) -> None:
    """Every directory under `root` is 0700 and every file 0600."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            assert mode(Path(dirpath, name)) == 0o700, Path(dirpath, name)
        for name in filenames:
            assert mode(Path(dirpath, name)) == 0o600, Path(dirpath, name)


def test_a_turn_from_the_cli_leaves_only_private_dirs_and_files(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("hi there"))
    result = trove(*env.common, "-p", "a secret question")
    assert result.returncode == 0, result.stderr
    assert mode(env.home) == 0o700
    assert_private_tree(env.home)
    assert list(env.home.rglob(LOG_NAME)), "the turn must have written a log"


def test_log_created_by_the_engine_is_private(tmp_path: Path) -> None:
    thread = Thread.create(tmp_path / "home", "local", "t1")
    thread.log.append(ev.UserMessage(text="secret"))
    thread.close()
    assert mode(tmp_path / "home") == 0o700
    assert_private_tree(tmp_path / "home")


def test_torn_tail_copy_is_private(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(b'{"seq":1,"ts":"x","kind":"user/message","text":"a"}\n{"seq":2,"ki')
    os.chmod(path, 0o644)
    log = SessionLog.open(path)
    log.close()
    copies = list(tmp_path.glob("session.jsonl.torn-*"))
    assert len(copies) == 1
    assert mode(copies[0]) == 0o600
    assert mode(path) == 0o600


def test_a_fork_is_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    thread = Thread.create(home, "local", "parent")
    thread.log.append(ev.UserMessage(text="secret"))
    thread.close()
    child = fork_thread(home, "local", "parent", new_id="child")
    assert mode(thread_dir(home, "local", child)) == 0o700
    assert_private_tree(home)


def test_archive_and_its_wal_and_shm_are_private(tmp_path: Path) -> None:
    path = tmp_path / "thread" / "task-history" / "history.sqlite"
    store = ArchiveStore(path, TaskContinuityConfig())
    text = "a secret fact"
    store.capture(1, [Source(source_id("user", 1, text), "user", 1, text)])
    names = sorted(p.name for p in path.parent.iterdir())
    assert {"history.sqlite", "history.sqlite-wal", "history.sqlite-shm"} <= set(names)
    assert_private_tree(tmp_path / "thread")
    store.close()


def test_exports_are_private(tmp_path: Path) -> None:
    from engine.runtime.export import export_thread

    home = tmp_path / "home"
    thread = Thread.create(home, "local", "t1")
    thread.log.append(ev.UserMessage(text="secret"))
    paths = export_thread(home, thread.id, thread.log.events)
    thread.close()
    assert [mode(p) for p in paths] == [0o600, 0o600]
    assert mode(home / "exports") == 0o700


def test_prompt_history_file_is_private(tmp_path: Path) -> None:
    from cli.prompt_input import prompt_history_path

    path = prompt_history_path(tmp_path / "home")
    assert path.is_file()
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700


def test_existing_too_open_modes_are_tightened_when_trove_writes_there(tmp_path: Path) -> None:
    """Data written by an older version (0755/0644) becomes private on its next use."""
    home = tmp_path / "home"
    thread = Thread.create(home, "local", "old")
    thread.log.append(ev.UserMessage(text="secret"))
    thread.close()
    store_path = thread.dir / "task-history" / "history.sqlite"
    store = ArchiveStore(store_path, TaskContinuityConfig())
    store.capture(1, [Source(source_id("user", 1, "x"), "user", 1, "x")])
    store.close()
    for directory in (home / "users", home / "users" / "local", thread.dir.parent, thread.dir):
        os.chmod(directory, 0o755)
    os.chmod(store_path.parent, 0o755)
    for file in (thread.dir / LOG_NAME, store_path):
        os.chmod(file, 0o644)

    Thread.resume(home, "local", "old").close()
    store = ArchiveStore(store_path, TaskContinuityConfig())
    store.capture(2, [Source(source_id("user", 2, "y"), "user", 2, "y")])
    store.close()
    assert_private_tree(home / "users")


def test_private_dir_creates_parents_above_the_base_normally(tmp_path: Path) -> None:
    """Only the data directories are made private; a missing parent of home is not ours."""
    base = tmp_path / "share" / "trove"
    private_dir(base / "users", base=base)
    assert mode(tmp_path / "share") == 0o755
    assert mode(base) == 0o700 and mode(base / "users") == 0o700


def test_touch_private_is_exact_even_under_a_strange_umask(tmp_path: Path) -> None:
    os.umask(0o277)
    made = private_dir(tmp_path / "d")
    touch_private(made / "f")
    assert mode(made) == 0o700
    assert mode(made / "f") == 0o600


def test_a_derived_file_is_read_only_when_it_is_a_regular_file_within_its_bound(
    tmp_path: Path,
) -> None:
    """What is found under a derived file's name is not trusted to be what was written:
    a link is not followed, a FIFO not waited on (no writer ever opens it here), a device,
    a directory or a file past the bound is refused, each as an OSError, before a read."""
    good = tmp_path / "good"
    good.write_bytes(b"0123456789")
    assert read_derived(good, 10) == b"0123456789"
    with open_derived(good, 10) as fh:
        assert fh.read(4) == b"0123"
    refused = {
        "past the bound": (good, errno.EFBIG),
        "link": (tmp_path / "link", errno.ELOOP),
        "link to a device": (tmp_path / "zero", errno.ELOOP),
        "fifo": (tmp_path / "fifo", errno.EINVAL),
        "directory": (tmp_path / "dir", errno.EINVAL),
        "device": (Path("/dev/zero"), errno.EINVAL),
    }
    (tmp_path / "link").symlink_to(good)
    (tmp_path / "zero").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    for what, (path, code) in refused.items():
        with pytest.raises(OSError) as raised:
            read_derived(path, 9 if what == "past the bound" else 1 << 20)
        assert raised.value.errno == code, what


def test_a_derived_file_is_written_through_a_new_private_copy(tmp_path: Path) -> None:
    """A link under the temporary copy's name (to the log) is replaced, not written
    through; a write that fails leaves the old file and no copy."""
    log = tmp_path / "session.jsonl"
    log.write_bytes(b"the log")
    target = tmp_path / "cache"
    temporary = tmp_path / ".cache.tmp"
    temporary.symlink_to(log)
    assert write_derived(target, [b"de", b"rived"], temporary=temporary)
    assert log.read_bytes() == b"the log"
    assert target.read_bytes() == b"derived" and mode(target) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "session.jsonl"]
    assert write_derived(target, [b"again"])
    assert target.read_bytes() == b"again"
    target.unlink()
    target.mkdir()  # cannot be replaced by a file
    assert not write_derived(target, [b"lost"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "session.jsonl"]
