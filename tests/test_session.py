"""Threads on disk: layout, resume with its end-seed, listing, ids, deletion."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine import events as ev
from engine.log import read_events
from engine.threads.paths import LOG_NAME, ThreadNotFoundError
from engine.threads.thread import Thread, delete_thread
from engine.workspace.listing import latest_thread, list_threads

# "name\n": `re.match` with `$` also matches before a trailing newline.
BAD_IDS = ["", ".", "..", "../escape", "a/b", "a b", "x" * 81, "name\n", "ünïcode"]


def _thread_with(
    home: Path, user: str, thread_id: str, *prompts: str, at: int | None = None
) -> Path:
    """A closed thread with `prompts`, each written at `at` seconds past the epoch when
    given (the listing orders by when a message was written)."""
    thread = Thread.create(home, user, thread_id)
    if at is not None:
        moment = datetime.fromtimestamp(at, UTC)
        thread.log.clock = lambda: moment
    for prompt in prompts:
        thread.log.append(ev.InboxQueued(text=prompt, waking=True, placement="follow-up"))
        thread.log.append(ev.UserMessage(text=prompt, item_id=thread.log.next_seq - 1))
    path = thread.log.path
    thread.close()
    return path


def _set_mtime(path: Path, seconds: int) -> None:
    os.utime(path, (seconds, seconds))


def test_create_lays_out_users_threads_session_jsonl(tmp_path: Path) -> None:
    thread = Thread.create(tmp_path, "alice", "t-1")
    expected = tmp_path / "users" / "alice" / "threads" / "t-1" / LOG_NAME
    assert LOG_NAME == "session.jsonl"
    assert thread.dir == expected.parent
    assert thread.log.path == expected
    assert expected.is_file()
    assert not thread.resumed
    thread.log.append(ev.UserMessage(text="hi"))
    thread.close()
    assert read_events(expected).events[0].text == "hi"


def test_create_without_an_id_makes_a_valid_unique_id(tmp_path: Path) -> None:
    first = Thread.create(tmp_path, "local")
    second = Thread.create(tmp_path, "local")
    assert first.id != second.id
    for thread in (first, second):
        assert thread.dir == tmp_path / "users" / "local" / "threads" / thread.id
        # The generated id must itself be accepted when resuming.
        thread.close()
        Thread.resume(tmp_path, "local", thread.id).close()


def test_resume_appends_one_end_seed_at_the_seam(tmp_path: Path) -> None:
    path = _thread_with(tmp_path, "local", "t", "first prompt")
    before = read_events(path).events

    thread = Thread.resume(tmp_path, "local", "t")
    assert thread.resumed
    assert thread.log.events[: len(before)] == before
    added = thread.log.events[len(before) :]
    assert [type(e) for e in added] == [ev.EndSeed]
    assert added[0].seq == len(before) + 1
    assert thread.log.tail.end_seed == added[0]
    thread.close()

    on_disk = read_events(path).events
    assert [type(e) for e in on_disk].count(ev.EndSeed) == 1

    Thread.resume(tmp_path, "local", "t").close()
    assert [type(e) for e in read_events(path).events].count(ev.EndSeed) == 2


def test_resume_of_an_empty_log_appends_nothing(tmp_path: Path) -> None:
    Thread.create(tmp_path, "local", "empty").close()
    thread = Thread.resume(tmp_path, "local", "empty")
    assert thread.log.events == []
    path = thread.log.path
    thread.close()
    assert path.read_bytes() == b""


def test_resume_of_a_missing_thread_raises(tmp_path: Path) -> None:
    with pytest.raises(ThreadNotFoundError):
        Thread.resume(tmp_path, "local", "nosuch")
    assert not (tmp_path / "users" / "local" / "threads" / "nosuch").exists()
    # Another user's thread is not found either.
    _thread_with(tmp_path, "alice", "mine", "x")
    with pytest.raises(ThreadNotFoundError):
        Thread.resume(tmp_path, "bob", "mine")


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_thread_ids_are_rejected_everywhere(tmp_path: Path, bad: str) -> None:
    home = tmp_path / "home"
    if bad:  # create treats "" (like None) as "make a new id"
        with pytest.raises(ThreadNotFoundError):
            Thread.create(home, "local", bad)
    with pytest.raises(ThreadNotFoundError):
        Thread.resume(home, "local", bad)
    with pytest.raises(ThreadNotFoundError):
        delete_thread(home, "local", bad)
    # Nothing is created, least of all outside the threads directory.
    assert not home.exists() or list(home.rglob(LOG_NAME)) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == (["home"] if home.exists() else [])


def test_list_threads_newest_first_with_the_first_prompt_as_title(tmp_path: Path) -> None:
    _thread_with(tmp_path, "local", "old", "the oldest question", "a later one", at=1_000)
    _thread_with(tmp_path, "local", "new", "  newest\n  question  ", at=3_000)
    _thread_with(tmp_path, "local", "mid", "x" * 100, at=2_000)
    empty = _thread_with(tmp_path, "local", "empty")
    _thread_with(tmp_path, "someone-else", "theirs", "not mine")
    _set_mtime(empty, 500)

    threads = list_threads(tmp_path, "local")
    assert [t.id for t in threads] == ["new", "mid", "old", "empty"]
    titles = {t.id: t.title for t in threads}
    assert titles["old"] == "the oldest question"
    assert titles["new"] == "newest question"
    assert titles["mid"] == "x" * 60
    assert titles["empty"] == "(empty)"
    assert threads[0].path == tmp_path / "users" / "local" / "threads" / "new"
    assert latest_thread(tmp_path, "local") == "new"


def test_title_skips_a_checkpoint(tmp_path: Path) -> None:
    thread = Thread.create(tmp_path, "local", "t")
    thread.log.append(ev.UserMessage(text="[summary]", checkpoint={"summary": 0}))
    thread.log.append(ev.UserMessage(text="real prompt"))
    thread.close()
    assert list_threads(tmp_path, "local")[0].title == "real prompt"


def test_list_threads_of_an_unknown_user_is_empty(tmp_path: Path) -> None:
    assert list_threads(tmp_path, "nobody") == []
    assert latest_thread(tmp_path, "nobody") is None


def test_delete_thread_removes_its_directory(tmp_path: Path) -> None:
    keep = _thread_with(tmp_path, "local", "keep", "stay")
    gone = _thread_with(tmp_path, "local", "gone", "go")
    (gone.parent / "task-history").mkdir()
    (gone.parent / "task-history" / "history.sqlite").write_bytes(b"x")

    delete_thread(tmp_path, "local", "gone")
    assert not gone.parent.exists()
    assert keep.is_file()
    assert [t.id for t in list_threads(tmp_path, "local")] == ["keep"]
    with pytest.raises(ThreadNotFoundError):
        delete_thread(tmp_path, "local", "gone")
    with pytest.raises(ThreadNotFoundError):
        Thread.resume(tmp_path, "local", "gone")


def test_the_resume_hint_names_home_and_user_only_when_a_bare_trove_would_not_find_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.threads.thread import resume_hint

    monkeypatch.setenv("TROVE_HOME", str(tmp_path / "default"))
    assert resume_hint("t1", home=tmp_path / "default", user_id="local") == (
        "resume with: trove --thread t1"
    )
    assert resume_hint("t1", home=tmp_path / "my data", user_id="bob") == (
        f"resume with: trove --home '{tmp_path / 'my data'}' --user bob --thread t1"
    )
