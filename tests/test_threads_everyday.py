"""Threads as people use them every day (issue 28, point 4): the list's order, numbers and
prefixes, `--continue`, `/rename`, one-shot threads and `/delete`."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.log import read_events
from engine.threads.paths import ThreadNotFoundError
from engine.threads.thread import Thread
from engine.workspace.listing import AmbiguousThreadError, list_threads, resolve_thread
from tests.cli_support import Env, trove


def _made(home: Path, thread_id: str, prompt: str, at: int) -> None:
    thread = Thread.create(home, "local", thread_id)
    moment = datetime.fromtimestamp(at, UTC)
    thread.log.clock = lambda: moment
    thread.log.append(ev.UserMessage(text=prompt))
    thread.log.append(ev.AssistantMessage(content="ok"))
    thread.close()


def _ids(home: Path) -> list[str]:
    return [info.id for info in list_threads(home, "local")]


def _logs(home: Path) -> dict[str, list[ev.Event]]:
    logs = (home / "users" / "local" / "threads").glob("*/session.jsonl")
    return {log.parent.name: read_events(log).events for log in logs}  # type: ignore[misc]


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


# -- the order of the list -------------------------------------------------------------


def test_opening_a_thread_or_running_a_command_does_not_move_it_up(tmp_path: Path) -> None:
    _made(tmp_path, "20250101-a", "older question", at=1_000)
    _made(tmp_path, "20250102-b", "newer question", at=2_000)
    assert _ids(tmp_path) == ["20250102-b", "20250101-a"]
    thread = Thread.resume(tmp_path, "local", "20250101-a")  # writes an end-seed
    run = thread.log.append(ev.CommandRun(name="help"))
    thread.log.append(ev.CommandDone(name="help", run=run.seq, result="Commands: …"))
    thread.close()
    assert _ids(tmp_path) == ["20250102-b", "20250101-a"]
    thread = Thread.resume(tmp_path, "local", "20250101-a")
    thread.log.append(ev.UserMessage(text="a message does"))
    thread.close()
    assert _ids(tmp_path) == ["20250101-a", "20250102-b"]


# -- numbers and prefixes ----------------------------------------------------------------


def test_a_thread_is_named_by_its_id_its_number_or_a_unique_prefix(tmp_path: Path) -> None:
    _made(tmp_path, "20250101-aaaa", "first", at=1_000)
    _made(tmp_path, "20250101-abcd", "second", at=2_000)
    _made(tmp_path, "20250202-beef", "third", at=3_000)
    assert resolve_thread(tmp_path, "local", "20250101-aaaa") == "20250101-aaaa"
    assert resolve_thread(tmp_path, "local", "1") == "20250202-beef"
    assert resolve_thread(tmp_path, "local", "3") == "20250101-aaaa"
    assert resolve_thread(tmp_path, "local", "202502") == "20250202-beef"
    assert resolve_thread(tmp_path, "local", "20250101-ab") == "20250101-abcd"
    with pytest.raises(AmbiguousThreadError) as many:
        resolve_thread(tmp_path, "local", "20250101-a")
    assert "20250101-aaaa, 20250101-abcd" in str(many.value)
    for nothing in ("4", "0", "zzz", "", "../x"):
        with pytest.raises(ThreadNotFoundError):
            resolve_thread(tmp_path, "local", nothing)


def test_thread_option_takes_a_number_or_a_prefix(env: Env, server: ScriptedServer) -> None:
    _made(env.home, "20250101-aaaa", "first", at=1_000)
    _made(env.home, "20250202-beef", "second", at=2_000)
    server.script(s.text("by number"), s.text("by prefix"))
    assert trove("-p", "hi", "--thread", "2", *env.common).returncode == 0
    assert trove("-p", "hi", "--thread", "20250202", *env.common).returncode == 0
    logs = _logs(env.home)
    assert len(logs) == 2
    replies = {
        tid: [e.content for e in events if isinstance(e, ev.AssistantMessage)]
        for tid, events in logs.items()
    }
    assert replies["20250101-aaaa"] == ["ok", "by number"]
    assert replies["20250202-beef"] == ["ok", "by prefix"]
    listed = trove("threads", *env.common).stdout.splitlines()
    assert listed[0].startswith("  1  20250202-beef") and listed[1].startswith("  2  20250101-aaaa")
    ambiguous = trove("-p", "hi", "--thread", "2025", *env.common)
    assert ambiguous.returncode == 2
    assert "20250101-aaaa, 20250202-beef" in _one_line(ambiguous.stderr)


def test_plain_threads_lists_numbers_and_switches_by_number(
    env: Env, server: ScriptedServer
) -> None:
    _made(env.home, "20250101-aaaa", "first topic", at=1_000)
    _made(env.home, "20250202-beef", "second topic", at=2_000)
    server.script(s.text("in the old one"))
    result = trove("--plain", *env.common, stdin="/threads\n/threads 2\nback again\n")
    assert result.returncode == 0, result.stderr
    assert "  1   20250202-beef" in result.stdout and "  2   20250101-aaaa" in result.stdout
    assert "[thread 20250101-aaaa]" in result.stderr
    replies = [e for e in _logs(env.home)["20250101-aaaa"] if isinstance(e, ev.AssistantMessage)]
    assert replies[-1].content == "in the old one"


# -- --continue ---------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["-c", "--continue"])
def test_continue_reopens_the_thread_with_the_newest_message(
    env: Env, server: ScriptedServer, flag: str
) -> None:
    _made(env.home, "20250101-aaaa", "older", at=1_000)
    _made(env.home, "20250202-beef", "newer", at=2_000)
    server.script(s.text("one-shot answer"), s.text("plain answer"))
    assert trove(flag, "-p", "more", *env.common).returncode == 0
    assert trove("--plain", flag, *env.common, stdin="and more\n").returncode == 0
    assert len(_logs(env.home)) == 2
    prompts = [e.text for e in _logs(env.home)["20250202-beef"] if isinstance(e, ev.UserMessage)]
    assert prompts == ["newer", "more", "and more"]


def test_continue_without_any_thread_or_with_thread_is_one_line_and_exit_2(env: Env) -> None:
    nothing = trove("-c", "-p", "hi", *env.common)
    assert nothing.returncode == 2
    assert "no thread to continue" in _one_line(nothing.stderr)
    _made(env.home, "20250101-aaaa", "older", at=1_000)
    both = trove("-c", "--thread", "20250101-aaaa", "-p", "hi", *env.common)
    assert both.returncode == 2
    assert "--continue" in _one_line(both.stderr)


# -- /rename ------------------------------------------------------------------------------


def test_rename_is_in_the_log_and_the_listings(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("answer"))
    result = trove(
        "--plain", *env.common, stdin="first prompt\n/rename  Trip \x1b[31mplanning \n/threads\n"
    )
    assert result.returncode == 0, result.stderr
    ((thread_id, events),) = _logs(env.home).items()
    (renamed,) = [e for e in events if isinstance(e, ev.SessionTitle)]
    assert renamed.title == "Trip \x1b[31mplanning"  # the log keeps what was typed
    assert "\x1b" not in result.stdout
    assert f"1 * {thread_id}" in result.stdout and "Trip planning" in result.stdout
    listed = json.loads(trove("threads", "--json", *env.common).stdout)
    assert listed[0]["title"] == "Trip planning"
    human = trove("threads", *env.common).stdout
    assert "Trip planning" in human and "first prompt" not in human


def test_rename_needs_a_title_and_a_thread_on_disk(env: Env, server: ScriptedServer) -> None:
    result = trove("--plain", *env.common, stdin="/rename\n/rename Something\n")
    assert "/rename TITLE" in result.stderr
    assert "nothing to rename yet" in result.stderr
    assert _logs(env.home) == {}


# -- one-shot threads ----------------------------------------------------------------------


def test_a_one_shot_thread_is_marked_and_a_continued_one_is_not(
    env: Env, server: ScriptedServer
) -> None:
    _made(env.home, "20250101-aaaa", "a chat", at=1_000)
    server.script(s.text("answer"), s.text("answer again"))
    assert trove("-p", "quick question", *env.common).returncode == 0
    assert trove("--thread", "20250101-aaaa", "-p", "more", *env.common).returncode == 0
    listed = {t["id"]: t for t in json.loads(trove("threads", "--json", *env.common).stdout)}
    (one_shot,) = [tid for tid in listed if tid != "20250101-aaaa"]
    assert listed[one_shot]["one_shot"] is True
    assert listed["20250101-aaaa"]["one_shot"] is False
    human = trove("threads", *env.common).stdout
    (line,) = [line for line in human.splitlines() if one_shot in line]
    assert line.endswith("quick question  [-p]")


def test_p_runs_a_command_instead_of_sending_it(env: Env, server: ScriptedServer) -> None:
    _made(env.home, "20250101-aaaa", "a chat", at=1_000)
    result = trove("-c", "-p", "/rename Named from a script", *env.common)
    assert result.returncode == 0, result.stderr
    assert server.requests == []
    assert list_threads(env.home, "local")[0].title == "Named from a script"
    unknown = trove("-c", "-p", "/nonsense", *env.common)
    assert unknown.returncode == 1
    assert "unknown command /nonsense" in _one_line(unknown.stderr)


def test_an_empty_p_is_one_line_and_exit_2(env: Env) -> None:
    result = trove("-p", "", *env.common)
    assert result.returncode == 2
    assert "-p: the prompt is empty" in _one_line(result.stderr)
    assert _logs(env.home) == {}


# -- /delete --------------------------------------------------------------------------------


def _archive(home: Path, thread_id: str) -> Path:
    folder = home / "users" / "local" / "threads" / thread_id / "task-history"
    folder.mkdir()
    (folder / "history.sqlite").write_bytes(b"archive")
    return folder.parent


def test_plain_delete_asks_and_removes_another_thread_with_its_archive(
    env: Env, server: ScriptedServer
) -> None:
    _made(env.home, "20250101-aaaa", "keep me", at=1_000)
    _made(env.home, "20250202-beef", "delete me", at=2_000)
    folder = _archive(env.home, "20250202-beef")
    kept = trove("--plain", *env.common, stdin="/delete 1\nno\n")
    assert kept.returncode == 0, kept.stderr
    assert "Delete thread 20250202-beef (delete me)" in kept.stdout + kept.stderr
    assert "Not deleted." in kept.stdout and folder.is_dir()
    gone = trove("--plain", *env.common, stdin="/delete 20250202\ny\n")
    assert gone.returncode == 0, gone.stderr
    assert "Deleted thread 20250202-beef and its archive." in gone.stdout
    assert not folder.exists()
    assert _ids(env.home) == ["20250101-aaaa"]


def test_plain_delete_of_this_thread_closes_it_first_and_goes_on_in_a_new_one(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("first answer"), s.text("in the new thread"))
    result = trove("--plain", *env.common, stdin="doomed prompt\n/delete\ny\nafter\n")
    assert result.returncode == 0, result.stderr
    ((thread_id, events),) = _logs(env.home).items()
    assert [e.text for e in events if isinstance(e, ev.UserMessage)] == ["after"]
    deleted = re.search(r"Deleted thread (\S+) and its archive\.", result.stdout + result.stderr)
    assert deleted is not None and deleted[1] != thread_id


def test_delete_refuses_a_thread_another_process_writes(env: Env, server: ScriptedServer) -> None:
    _made(env.home, "20250101-aaaa", "held", at=1_000)
    holder = Thread.resume(env.home, "local", "20250101-aaaa")
    try:
        result = trove("--plain", *env.common, stdin="/delete 20250101-aaaa\ny\n")
    finally:
        holder.close()
    assert "open in another Trove process" in result.stderr
    assert _ids(env.home) == ["20250101-aaaa"]


def test_p_deletes_only_a_thread_named_by_its_full_id(env: Env, server: ScriptedServer) -> None:
    _made(env.home, "20250101-aaaa", "one", at=1_000)
    _made(env.home, "20250202-beef", "two", at=2_000)
    refused = trove("-p", "/delete 1", *env.common)
    assert refused.returncode == 1
    assert "full id" in _one_line(refused.stderr)
    assert trove("-p", "/delete 20250101-aaaa", *env.common).returncode == 0
    assert _ids(env.home) == ["20250202-beef"]
    itself = trove("-c", "-p", "/delete 20250202-beef", *env.common)
    assert itself.returncode == 0, itself.stderr
    assert "Deleted thread 20250202-beef and its archive." in itself.stdout
    assert _ids(env.home) == []


def test_plain_at_a_terminal_asks_in_the_prompt_line(env: Env, server: ScriptedServer) -> None:
    from tests.test_plain_tty import LIVE, Terminal

    _made(env.home, "20250101-aaaa", "an old chat", at=1_000)
    folder = env.home / "users" / "local" / "threads" / "20250101-aaaa"
    terminal = Terminal(env)
    try:
        terminal.wait_for(LIVE)
        terminal.type("/delete 1\r")
        mark = terminal.mark()
        terminal.wait_for(r"Delete thread 20250101-aaaa \(an old chat\).*\[y/N\]")
        terminal.type("n\r")
        terminal.wait_for(r"Not deleted\.", since=mark)
        assert folder.is_dir()
        terminal.type("/delete 1\r")
        mark = terminal.mark()
        terminal.wait_for(r"\[y/N\]", since=mark)
        terminal.type("y\r")
        terminal.wait_for(r"Deleted thread 20250101-aaaa and its archive\.", since=mark)
        assert not folder.exists()
    finally:
        terminal.close()
    assert "Traceback" not in terminal.seen


def test_continue_in_the_app_at_a_real_terminal(env: Env) -> None:
    """`trove -c` (the Textual app, at a pty) shows the thread with the newest message."""
    from tests.test_plain_tty import Terminal

    _made(env.home, "20250101-aaaa", "the older one", at=1_000)
    thread = Thread.create(env.home, "local", "20250202-beef")
    moment = datetime.fromtimestamp(2_000, UTC)
    thread.log.clock = lambda: moment
    thread.log.append(ev.UserMessage(text="the newer one"))
    thread.log.append(ev.AssistantMessage(content="noted: QUOKKA-8"))
    thread.close()
    term = Terminal(env, "-c")
    try:
        term.wait_for(r"noted: QUOKKA-8")
        term.type("\x11")  # Ctrl+Q
        term.wait_for(r"resume with: .*--thread 20250202-beef")
        assert term.proc.wait(timeout=20) == 0
    finally:
        term.close()
