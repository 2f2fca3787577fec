"""Issue 13 points 2-4: `trove history search QUERY --all` and `trove threads` (--json).

Every thread of the user is searched (archived batches and active messages),
grouped by thread with its title and date; another user's threads never are;
no writer or lock is needed (a thread held by another process is still
searched); a thread whose log does not load is one line, never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from engine import events as ev
from engine.config import TaskContinuityConfig
from engine.continuity.archive.extract import source_id
from engine.continuity.archive.records import Source
from engine.continuity.archive.status import archive_reference, scope_binding
from engine.continuity.archive.store import ArchiveStore, archive_path
from engine.log import LoadResult
from engine.threads.paths import thread_dir
from engine.threads.thread import Thread
from engine.workspace import summary as thread_summary
from engine.workspace.reports import cli_search
from engine.workspace.search_all import search_all
from engine.workspace.summary import CACHE_NAME, summarize
from tests.cli_support import Env, trove

CODE = "QX-7731-ZB"


def compacted_thread(
    home: Path, user: str, thread_id: str, archived: str, active: str = "a later question"
) -> Thread:
    """A thread whose first prompt was compacted into batch 1 (as /compact leaves it),
    then one active message; returned open, holding its writer lock."""
    thread = Thread.create(home, user, thread_id)
    log = thread.log
    first = log.append(ev.UserMessage(text=archived))
    reply = log.append(ev.AssistantMessage(content="Noted.", tool_calls=[]))
    start = log.append(ev.CompactStart(turn=None, seqs=[first.seq, reply.seq])).seq
    summary = log.append(
        ev.CompactSummary(
            start=start,
            summary="Earlier work.",
            span=ev.SeqSpan(first.seq, reply.seq),
            replaced=[first.seq, reply.seq],
        )
    ).seq
    log.append(
        ev.UserMessage(
            text="Checkpoint: earlier work.",
            checkpoint=ev.Checkpoint(summary=summary, start=start),
        )
    )
    scope = scope_binding(user, thread_id)
    store = ArchiveStore(archive_path(thread.dir), TaskContinuityConfig(), scope=scope)
    records = [
        Source(source_id("user", first.seq, archived), "user", first.seq, archived),
        Source(source_id("assistant", reply.seq, "Noted."), "assistant", reply.seq, "Noted."),
    ]
    result = store.capture(start, records)
    store.close()
    log.append(ev.CompactEnd(start=start, archive=archive_reference(result, scope)))
    log.append(ev.UserMessage(text=active))
    log.flush()
    return thread


def made(home: Path, user: str, thread_id: str, archived: str, active: str = "later") -> None:
    compacted_thread(home, user, thread_id, archived, active).close()


def test_all_finds_a_code_in_an_old_thread_and_never_another_users(env: Env) -> None:
    made(env.home, "local", "20250101-old", f"The vault code is {CODE} keep it")
    made(env.home, "local", "20250301-new", "Nothing to see here", f"but {CODE} again")
    made(env.home, "local", "20250302-other", "unrelated words only")
    made(env.home, "someone-else", "20250303-theirs", f"their {CODE} must stay theirs")

    found = trove(*env.common, "history", "search", CODE, "--all", "--json")
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["threads_searched"] == 3 and result["problems"] == []
    groups = {g["thread"]: g for g in result["threads"]}
    assert set(groups) == {"20250101-old", "20250301-new"}  # not someone-else's
    old = groups["20250101-old"]
    assert old["title"] == f"The vault code is {CODE} keep it"
    assert old["last_activity"] and old["status"] == "available"
    assert [(r["origin"], r["role"]) for r in old["results"]] == [("archive", "user")]
    assert groups["20250301-new"]["results"][0]["origin"] == "active"
    # Each group is exactly the object the thread's own history_search returns.
    for thread_id, group in groups.items():
        own = cli_search(env.home, "local", thread_id, CODE)
        assert {k: v for k, v in group.items() if k not in ("thread", "title")} == {
            **own,
            "last_activity": group["last_activity"],
        }
    # The other user sees only their own thread.
    theirs = trove(*env.common, "--user", "someone-else", "history", "search", CODE, "--all")
    assert theirs.returncode == 0
    assert "20250303-theirs" in theirs.stdout and "20250101-old" not in theirs.stdout

    human = trove(*env.common, "history", "search", CODE, "--all")
    assert human.returncode == 0, human.stderr
    assert "searched 3 threads: matches in 2" in human.stdout
    assert "thread 20250101-old" in human.stdout and f"The vault code is {CODE}" in human.stdout


def test_all_works_while_another_process_holds_a_threads_writer(env: Env) -> None:
    holder = compacted_thread(env.home, "local", "held", f"held code {CODE}")
    try:
        before = sorted(os.listdir(holder.dir / "task-history"))
        found = trove(*env.common, "history", "search", CODE, "--all", "--json")
        assert found.returncode == 0, found.stderr
        assert [g["thread"] for g in json.loads(found.stdout)["threads"]] == ["held"]
        assert sorted(os.listdir(holder.dir / "task-history")) == before  # no -wal, no -shm
        holder.log.append(ev.UserMessage(text=f"and a new {CODE} while held"))
        holder.log.flush()
        again = json.loads(trove(*env.common, "history", "search", CODE, "--all", "--json").stdout)
        origins = [r["origin"] for r in again["threads"][0]["results"]]
        assert origins == ["active", "archive"]  # the cache followed the grown log
    finally:
        holder.close()


def test_a_damaged_thread_is_one_line_searched_up_to_its_bad_line(env: Env) -> None:
    """A bad line ends what is searched of that thread (its consistent prefix), is named
    in one line, and nothing is changed on disk; the other threads are searched as ever."""
    made(env.home, "local", "good", f"good {CODE}")
    made(env.home, "local", "broken", f"broken {CODE}")
    log = env.home / "users" / "local" / "threads" / "broken" / "session.jsonl"
    log.write_bytes(log.read_bytes().replace(b'"kind":"compact/end"', b'"kind":"compact/end",', 1))
    damaged = log.read_bytes()
    files = sorted(p.name for p in log.parent.iterdir())
    made(env.home, "local", "lost-archive", f"lost {CODE}", f"active {CODE}")
    archive = env.home / "users" / "local" / "threads" / "lost-archive" / "task-history"
    for path in archive.iterdir():
        path.unlink()
    result = trove(*env.common, "history", "search", CODE, "--all")
    assert result.returncode == 0 and "Traceback" not in result.stderr + result.stdout
    lines = result.stdout.splitlines()
    assert len([line for line in lines if "thread broken:" in line]) == 1
    assert any("thread lost-archive: history unavailable" in line for line in lines)
    assert "thread good" in result.stdout
    data = json.loads(trove(*env.common, "history", "search", CODE, "--all", "--json").stdout)
    assert {g["thread"] for g in data["threads"]} == {"good", "lost-archive"}
    assert {p["thread"] for p in data["problems"]} == {"broken", "lost-archive"}
    (broken,) = [p["problem"] for p in data["problems"] if p["thread"] == "broken"]
    assert broken.startswith("session.jsonl:6: not valid JSON")
    assert broken.endswith("(searched the lines before it)")
    assert data["threads_searched"] == 3 and data["threads_not_searched"] == 0
    assert log.read_bytes() == damaged and sorted(p.name for p in log.parent.iterdir()) == files


def test_all_refuses_thread_and_checks_the_query_like_the_tool(env: Env) -> None:
    bad = trove(*env.common, "--thread", "x", "history", "search", CODE, "--all")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    empty = trove(*env.common, "history", "search", " ", "--all", "--json")
    assert empty.returncode == 2 and json.loads(empty.stdout)["error"] == "invalid_arguments"


def test_threads_json_lists_title_counts_compactions_and_last_activity(env: Env) -> None:
    made(env.home, "local", "20250101-a", "First prompt of a")
    made(env.home, "local", "20250102-b", "First prompt of b")
    listed = trove(*env.common, "threads", "--json")
    assert listed.returncode == 0, listed.stderr
    items = {item["id"]: item for item in json.loads(listed.stdout)}
    assert set(items) == {"20250101-a", "20250102-b"}
    a = items["20250101-a"]
    assert set(a) == {
        "id",
        "title",
        "messages",
        "compactions",
        "last_activity",
        "last_message",
        "modified",
        "one_shot",
        "problem",
    }
    assert a["title"] == "First prompt of a"
    assert (a["messages"], a["compactions"], a["problem"]) == (3, 1, None)
    assert a["last_activity"].startswith("20") and a["last_message"].startswith("20")
    assert a["one_shot"] is False
    human = trove(*env.common, "threads")
    assert "3 messages, 1 compaction" in human.stdout and "First prompt of b" in human.stdout


def test_the_summary_cache_is_private_and_a_stale_one_is_never_used(tmp_path: Path) -> None:
    home = tmp_path / "home"
    thread = compacted_thread(home, "local", "t", f"code {CODE}")
    assert search_all(home, "local", CODE)["threads"]
    cache = thread.dir / CACHE_NAME
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    thread.log.append(ev.UserMessage(text="ZEBRA-LATE arrives"))
    thread.log.flush()
    assert search_all(home, "local", "ZEBRA-LATE")["threads"][0]["thread"] == "t"
    cache.write_bytes(b"garbage")  # a damaged cache is derived again, never an error
    assert search_all(home, "local", "ZEBRA-LATE")["threads"]
    thread.close()


def test_a_rewound_thread_is_summarized_and_searched_on_its_current_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    thread = compacted_thread(home, "local", "t", f"code {CODE}", active="KEPT-ONE stays")
    log = thread.log
    kept = log.events[-1].seq
    log.append(ev.AssistantMessage(content="ABANDONED-REPLY later", tool_calls=[]))
    log.flush()
    before = summarize(home, "local", "t")
    assert before.messages == 4 and search_all(home, "local", "ABANDONED-REPLY")["threads"]
    log.append(ev.SessionRewind(after=kept))  # back to the prompt: the reply is off the line
    log.flush()
    after = summarize(home, "local", "t")
    assert after.messages == 3 and after.title == f"code {CODE}"
    assert after.last_activity >= before.last_activity
    assert not search_all(home, "local", "ABANDONED-REPLY")["threads"]
    assert search_all(home, "local", "KEPT-ONE")["threads"]
    assert search_all(home, "local", CODE)["threads"]  # the archive is still reachable
    thread.close()


def test_an_append_between_the_key_and_the_read_never_leaves_a_fresh_looking_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race, without sleeps: the writer appends right after the key was taken
    (the read sees more than the key) or right after the read (the log changed
    before the cache was stored); either way the next reader derives afresh."""
    home = tmp_path / "home"
    thread = compacted_thread(home, "local", "t", f"code {CODE}")
    real = thread_summary._read_log
    for when, word in (("before", "ZEBRA-BEFORE"), ("after", "ZEBRA-AFTER")):

        def racing(path: Path, when: str = when, word: str = word) -> LoadResult:
            if when == "before":
                thread.log.append(ev.UserMessage(text=f"{word} arrives"))
                thread.log.flush()
            loaded = real(path)
            if when == "after":
                thread.log.append(ev.UserMessage(text=f"{word} arrives"))
                thread.log.flush()
            return loaded

        (thread.dir / CACHE_NAME).unlink(missing_ok=True)
        monkeypatch.setattr(thread_summary, "_read_log", racing)
        count = summarize(home, "local", "t").messages
        monkeypatch.setattr(thread_summary, "_read_log", real)
        fresh = summarize(home, "local", "t")
        assert fresh.messages == count + (1 if when == "after" else 0)
        assert any(word in s.text for s in fresh.active)
        assert summarize(home, "local", "t") == fresh  # now cached, and it is the fresh one
    thread.close()


def test_a_log_rewritten_to_the_same_size_and_mtime_is_not_read_from_the_cache(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    made(home, "local", "t", f"code {CODE}", active="ALPHA-1111 here")
    assert summarize(home, "local", "t")
    log_path = thread_dir(home, "local", "t") / "session.jsonl"
    before = log_path.stat()
    log_path.write_bytes(log_path.read_bytes().replace(b"ALPHA-1111", b"OMEGA-2222"))
    os.utime(log_path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    assert any("OMEGA-2222" in s.text for s in summarize(home, "local", "t").active)


def test_a_cache_that_cannot_be_written_is_silent(tmp_path: Path) -> None:
    home = tmp_path / "home"
    made(home, "local", "t", f"code {CODE}")
    cache = thread_dir(home, "local", "t") / CACHE_NAME
    cache.mkdir()  # neither readable as a cache nor replaceable by one
    assert search_all(home, "local", CODE)["threads"][0]["thread"] == "t"
    assert cache.is_dir()
    assert not [p for p in cache.parent.iterdir() if p.name.startswith(f".{CACHE_NAME}")]


def test_a_cache_copied_to_another_thread_is_not_used(tmp_path: Path) -> None:
    home = tmp_path / "home"
    made(home, "local", "a", f"code {CODE}")
    made(home, "local", "b", "nothing here")
    assert summarize(home, "local", "a") and summarize(home, "local", "b")
    a, b = thread_dir(home, "local", "a"), thread_dir(home, "local", "b")
    shutil.copy2(a / CACHE_NAME, b / CACHE_NAME)
    assert summarize(home, "local", "b").thread == "b"
    assert not any(CODE in s.text for s in summarize(home, "local", "b").active)


def _threads(env: Env) -> dict[str, dict[str, object]]:
    """`trove threads --json` in a child with a timeout and a capped address space."""
    listed = trove(*env.common, "threads", "--json", timeout=20, memory=1 << 30)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    return {item["id"]: item for item in json.loads(listed.stdout)}


@pytest.mark.parametrize(
    "damage", ["garbled", "huge", "link to /dev/zero", "fifo", "link to another's"]
)
def test_a_summary_cache_that_is_damaged_or_not_a_file_is_derived_again(
    env: Env, damage: str
) -> None:
    """Issue 30 point 3: `trove threads` and `--all` show the log's truth, without waiting
    on a FIFO or reading past a bound, and the next reader writes a true cache."""
    made(env.home, "local", "t", f"code {CODE}")
    made(env.home, "local", "u", "another thread", "with more in it")
    truth = _threads(env)
    cache = thread_dir(env.home, "local", "t") / CACHE_NAME
    assert cache.is_file()
    thread = Thread.resume(env.home, "local", "t")
    thread.log.append(ev.UserMessage(text="ZEBRA-LATE arrives"))
    thread.close()
    cache.unlink()
    if damage == "garbled":
        cache.write_bytes(b"\x94\x04" + b"\xff" * 4096)
    elif damage == "huge":
        cache.write_bytes(b"\x94\x04")
        os.truncate(cache, 2 << 30)
    elif damage == "link to /dev/zero":
        cache.symlink_to("/dev/zero")
    elif damage == "fifo":
        os.mkfifo(cache)
    else:
        cache.symlink_to(thread_dir(env.home, "local", "u") / CACHE_NAME)
    listed = _threads(env)
    assert listed["t"]["messages"] == truth["t"]["messages"] + 1
    assert listed["u"] == truth["u"]
    found = trove(*env.common, "history", "search", "ZEBRA-LATE", "--all", "--json", timeout=20)
    assert [g["thread"] for g in json.loads(found.stdout)["threads"]] == ["t"]
    assert cache.is_file() and not cache.is_symlink()  # derived again, and kept
    assert summarize(env.home, "local", "t").messages == truth["t"]["messages"] + 1


def test_a_cache_for_a_log_changed_in_place_is_never_believed(env: Env) -> None:
    """The log rewritten to the same size, its mtime put back and its last bytes as they
    were (the change is in its head: the first prompt, and a prompt turned into an
    injection): the title `--all` shows and the count `trove threads` shows are the
    log's, not what a cache made for the old content says."""
    thread = Thread.create(env.home, "local", "t")
    thread.log.append(ev.UserMessage(text="TITLE-AAAA the first prompt"))
    thread.log.append(ev.UserMessage(text="a second prompt", source="typing"))
    for n in range(40):  # the change stays out of the log's last 4 KiB
        thread.log.append(ev.AssistantMessage(content=f"reply {n} " + "words " * 30))
    thread.close()
    before = _threads(env)["t"]
    assert before["messages"] == 42
    found = json.loads(
        trove(*env.common, "history", "search", "TITLE-AAAA", "--all", "--json").stdout
    )
    assert found["threads"][0]["title"] == "TITLE-AAAA the first prompt"

    log_path = thread_dir(env.home, "local", "t") / "session.jsonl"
    old = log_path.stat()
    data = log_path.read_bytes()
    changed = data.replace(b"TITLE-AAAA", b"TITLE-BBBB").replace(b'"typing"', b'"inject"')
    assert len(changed) == len(data) and changed[-4096:] == data[-4096:]
    log_path.write_bytes(changed)
    os.utime(log_path, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert (log_path.stat().st_size, log_path.stat().st_mtime_ns) == (old.st_size, old.st_mtime_ns)

    assert _threads(env)["t"]["messages"] == 41
    found = json.loads(
        trove(*env.common, "history", "search", "TITLE-BBBB", "--all", "--json").stdout
    )
    assert found["threads"][0]["title"] == "TITLE-BBBB the first prompt"
