"""End to end: the `trove` command in a subprocess against the scripted server.

The real `openai` client in the child process talks to the scripted server in
this process over real sockets; nothing is patched.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.log import Event, read_events
from tests.cli_support import Env, trove, write_config
from tests.support import chat_messages, of_kind


def _logs(home: Path, user: str = "local") -> list[Path]:
    return sorted((home / "users" / user / "threads").glob("*/session.jsonl"))


def _only_log(home: Path) -> tuple[str, list[Event]]:
    logs = _logs(home)
    assert len(logs) == 1, logs
    return logs[0].parent.name, read_events(logs[0]).events


def _turn_kinds(events: list[Event]) -> list[str]:
    wanted = (ev.TurnStart, ev.UserMessage, ev.AssistantMessage, ev.TurnEnd, ev.EndSeed)
    return [type(e) for e in events if type(e) in wanted]


def _lines(mode: str, line: str) -> str:
    """Stdin for a test of both modes: `--plain` reads its prompt there, while `-p` has
    it in its arguments and would append piped text to it."""
    return f"{line}\n" if mode == "--plain" else ""


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected exactly one line on stderr, got:\n{stderr}"
    assert "Traceback" not in stderr, stderr
    return lines[0]


# -- happy paths ------------------------------------------------------------------------


def test_plain_with_piped_stdin_streams_the_answer_and_logs_the_turn(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("Hello from the scripted model."))
    result = trove("--plain", *env.common, stdin="hello\n")
    assert result.returncode == 0, result.stderr
    assert "Hello from the scripted model." in result.stdout
    assert "Traceback" not in result.stderr

    _, events = _only_log(env.home)
    assert _turn_kinds(events) == [ev.TurnStart, ev.UserMessage, ev.AssistantMessage, ev.TurnEnd]
    (user,) = of_kind(events, ev.UserMessage)
    (reply,) = of_kind(events, ev.AssistantMessage)
    (end,) = of_kind(events, ev.TurnEnd)
    assert user.text == "hello"
    assert reply.content == "Hello from the scripted model."
    assert reply.usage is not None and reply.usage.total_tokens > 0
    assert end.status == "ok"
    # The request really went over the wire with the prompt in it.
    assert server.requests[0]["messages"][-1] == {"role": "user", "content": "hello"}
    assert server.requests[0]["stream"] is True


def test_plain_runs_two_piped_lines_as_two_turns_in_order(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("first answer"), s.text("second answer"))
    result = trove("--plain", *env.common, stdin="one\ntwo\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.index("first answer") < result.stdout.index("second answer")

    _, events = _only_log(env.home)
    starts = [e for e in events if isinstance(e, ev.TurnStart)]
    assert [e.turn for e in starts] == [1, 2]
    assert [len(e.items) for e in starts] == [1, 1], "each line is its own turn"
    assert [e.text for e in events if isinstance(e, ev.UserMessage)] == ["one", "two"]
    assert (
        _turn_kinds(events) == [ev.TurnStart, ev.UserMessage, ev.AssistantMessage, ev.TurnEnd] * 2
    )
    # The second line was handled after the first finished: its request carries the first answer.
    second = [(m["role"], m["content"]) for m in server.requests[1]["messages"]]
    assert second[-3:] == [("user", "one"), ("assistant", "first answer"), ("user", "two")]


def test_piped_stdin_without_a_mode_uses_line_mode(env: Env, server: ScriptedServer) -> None:
    """The TUI needs a terminal; with piped input `trove` reads lines instead."""
    server.script(s.text("plain by default"))
    result = trove(*env.common, stdin="hi\n")
    assert result.returncode == 0, result.stderr
    assert "plain by default" in result.stdout
    _, events = _only_log(env.home)
    assert [e.text for e in events if isinstance(e, ev.UserMessage)] == ["hi"]


def test_prompt_flag_prints_only_the_answer(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("just the answer"))
    result = trove(*env.common, "-p", "hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "just the answer\n"
    assert result.stderr == ""
    _, events = _only_log(env.home)
    assert _turn_kinds(events) == [ev.TurnStart, ev.UserMessage, ev.AssistantMessage, ev.TurnEnd]


def _sent_prompt(server: ScriptedServer) -> str:
    """The user message the one request carried: what the model was really sent."""
    (request,) = server.requests
    return chat_messages(request)[-1]["content"]


def test_prompt_flag_appends_piped_stdin_after_a_blank_line(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("It is a list."))
    result = trove(*env.common, "-p", "what is this?", stdin="milk\neggs\n\nbread\n\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "It is a list.\n"
    # The question, a blank line, stdin's text (its trailing newlines dropped).
    assert _sent_prompt(server) == "what is this?\n\nmilk\neggs\n\nbread"
    _, events = _only_log(env.home)
    assert [e.text for e in events if isinstance(e, ev.UserMessage)] == [_sent_prompt(server)]


def test_prompt_dash_reads_the_whole_prompt_from_stdin(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("from stdin"))
    result = trove(*env.common, "-p", "-", stdin="\ufeffsummarise:\n  indented line\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "from stdin\n"
    assert _sent_prompt(server) == "summarise:\n  indented line"  # BOM and last newline gone


@pytest.mark.parametrize("stdin", ["", "\n \n"], ids=["empty pipe", "blank pipe"])
def test_prompt_flag_with_nothing_on_stdin_sends_just_the_question(
    env: Env, server: ScriptedServer, stdin: str
) -> None:
    server.script(s.text("ok"))
    result = trove(*env.common, "-p", "just this", stdin=stdin)
    assert result.returncode == 0, result.stderr
    assert _sent_prompt(server) == "just this"


def test_prompt_flag_with_stdin_from_dev_null_sends_just_the_question(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("ok"))
    result = trove(*env.common, "-p", "just this", stdin_from=Path(os.devnull))
    assert result.returncode == 0, result.stderr
    assert _sent_prompt(server) == "just this"


def test_prompt_flag_sends_five_megabytes_of_stdin_whole(env: Env, server: ScriptedServer) -> None:
    """A large file piped in arrives whole: one read, one join (no quadratic cost)."""
    with env.config.open("a", encoding="utf-8") as f:
        f.write("  context_window: 10000000\n")  # no compaction of the one prompt
    line = "0123456789 abcdefghij ABCDEFGHIJ klmnopqrst KLMNOPQRST uvwxyz é ü 中文\n"
    big = line * (5_000_000 // len(line.encode()) + 1)
    server.script(s.text("long"))
    result = trove(*env.common, "-p", "count the lines", stdin=big)
    assert result.returncode == 0, result.stderr
    sent = _sent_prompt(server)
    assert len(sent.encode()) > 5_000_000
    assert sent == "count the lines\n\n" + big.rstrip("\n")


@pytest.mark.parametrize(
    ("args", "stdin", "needle"),
    [
        (["-p", ""], "", "the prompt is empty"),
        (["-p", "  "], "piped text\n", "the prompt is empty"),
        (["-p", "-"], "", "stdin is empty"),
        (["-p", "-"], "\n\n", "stdin is empty"),
    ],
    ids=["-p ''", "-p blank", "-p - empty stdin", "-p - blank stdin"],
)
def test_an_empty_prompt_is_a_usage_error(
    env: Env, server: ScriptedServer, args: list[str], stdin: str, needle: str
) -> None:
    result = trove(*env.common, *args, stdin=stdin)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert needle in _one_line(result.stderr)
    assert result.stdout == ""
    assert server.requests == []
    assert _logs(env.home) == [], "nothing was sent, so no thread is made"


@pytest.mark.parametrize("args", [["-p", "what is this?"], ["-p", "-"]])
def test_stdin_that_is_not_utf8_is_one_line_and_exit_2(
    env: Env, server: ScriptedServer, tmp_path: Path, args: list[str]
) -> None:
    data = tmp_path / "latin1.txt"
    data.write_bytes("café au lait\n".encode("latin-1"))
    result = trove(*env.common, *args, stdin_from=data)
    assert result.returncode == 2, (result.stdout, result.stderr)
    line = _one_line(result.stderr)
    assert "not UTF-8" in line and "0xe9 at offset 3" in line, line
    assert server.requests == []
    assert _logs(env.home) == []


def test_thread_flag_resumes_with_an_end_seed_and_the_prior_turns(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("first answer"), s.text("second answer"))
    assert trove(*env.common, "-p", "first question").returncode == 0
    thread_id, _ = _only_log(env.home)

    result = trove(*env.common, "--thread", thread_id, "-p", "second question")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "second answer\n"

    again_id, events = _only_log(env.home)
    assert again_id == thread_id, "resume must not create a new thread"
    assert _turn_kinds(events) == [
        ev.TurnStart,
        ev.UserMessage,
        ev.AssistantMessage,
        ev.TurnEnd,
        ev.EndSeed,
        ev.TurnStart,
        ev.UserMessage,
        ev.AssistantMessage,
        ev.TurnEnd,
    ]
    assert [e.turn for e in events if isinstance(e, ev.TurnStart)] == [1, 2]
    sent = [(m["role"], m["content"]) for m in server.requests[1]["messages"]]
    assert sent[-3:] == [
        ("user", "first question"),
        ("assistant", "first answer"),
        ("user", "second question"),
    ]


def test_plain_resumes_a_thread_too(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("one"), s.text("two"))
    assert trove(*env.common, "-p", "q1").returncode == 0
    thread_id, _ = _only_log(env.home)
    result = trove("--plain", *env.common, "--thread", thread_id, stdin="q2\n")
    assert result.returncode == 0, result.stderr
    _, events = _only_log(env.home)
    assert [type(e) for e in events].count(ev.EndSeed) == 1
    assert [m["content"] for m in chat_messages(server.requests[1]) if m["role"] == "user"] == [
        "q1",
        "q2",
    ]


def test_threads_lists_and_common_options_go_before_or_after(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("a"))
    assert trove(*env.common, "-p", "what is a trove").returncode == 0
    thread_id, _ = _only_log(env.home)

    before = trove(*env.common, "threads")
    after = trove("threads", *env.common)
    for result in (before, after):
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        lines = result.stdout.splitlines()
        assert len(lines) == 1
        assert lines[0].startswith(f"  1  {thread_id}")
        assert "what is a trove" in lines[0]
    assert before.stdout == after.stdout

    other_user = trove("threads", *env.common, "--user", "bob")
    assert other_user.returncode == 0
    assert thread_id not in other_user.stdout


def test_user_option_places_the_thread_under_that_user(env: Env, server: ScriptedServer) -> None:
    server.script(s.text("ok"))
    result = trove("--user", "alice", *env.common, "-p", "hi")
    assert result.returncode == 0, result.stderr
    assert len(_logs(env.home, "alice")) == 1
    assert _logs(env.home, "local") == []


# -- failures: one line, the right exit code, no traceback --------------------------------


@pytest.mark.parametrize(
    ("yaml_text", "key"),
    [
        ("model:\n  nme: gpt\n", "model.nme"),
        ("model:\n  context_window: lots\n", "model.context_window"),
        ("compaction:\n  auto: maybe\n", "compaction.auto"),
    ],
    ids=["unknown key", "bad int", "bad bool"],
)
def test_bad_config_exits_2_with_one_line_naming_file_and_key(
    tmp_path: Path, server: ScriptedServer, yaml_text: str, key: str
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(yaml_text, encoding="utf-8")
    result = trove("--home", str(tmp_path / "home"), "--config", str(config), "-p", "hi")
    assert result.returncode == 2
    line = _one_line(result.stderr)
    assert str(config) in line and key in line, line
    assert result.stdout == ""
    assert server.requests == []
    assert not (tmp_path / "home").exists() or _logs(tmp_path / "home") == []


@pytest.mark.parametrize("mode", ["-p", "--plain"])
def test_unreachable_server_gives_one_clear_line_and_exit_1(
    tmp_path: Path, mode: str, refused_port: int
) -> None:
    port = refused_port
    config = tmp_path / "config.yaml"
    write_config(config, f"http://127.0.0.1:{port}/v1")
    args = [mode, "hi"] if mode == "-p" else [mode]
    result = trove(
        "--home", str(tmp_path / "home"), "--config", str(config), *args, stdin=_lines(mode, "hi")
    )
    assert result.returncode == 1, (result.stdout, result.stderr)
    line = _one_line(result.stderr)
    assert "reach" in line and str(port) in line, line
    # The prompt is not lost: it is in the log of the failed turn.
    _, events = _only_log(tmp_path / "home")
    assert [e.text for e in events if isinstance(e, ev.UserMessage)] == ["hi"]
    assert [e.status for e in events if isinstance(e, ev.TurnEnd)] == ["error"]


def test_401_gives_one_line_about_the_api_key_and_exit_1(env: Env, server: ScriptedServer) -> None:
    server.script(s.error(401, "Incorrect API key provided: test-key"))
    result = trove(*env.common, "-p", "hi")
    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert "401" in line and "API key" in line, line
    assert result.stdout.strip() == ""


@pytest.mark.parametrize(
    "args",
    [["--bogus"], ["threads", "--bogus"], ["-p"], ["--plain", "-p", "x"]],
    ids=["unknown flag", "unknown flag after subcommand", "missing value", "exclusive modes"],
)
def test_bad_usage_exits_2_with_one_line(tmp_path: Path, args: list[str]) -> None:
    result = trove("--home", str(tmp_path / "home"), *args)
    assert result.returncode == 2
    _one_line(result.stderr)
    assert result.stdout == ""


@pytest.mark.parametrize("thread", ["nosuch", "../escape"])
@pytest.mark.parametrize("mode", ["-p", "--plain"])
def test_unknown_thread_exits_2_with_one_line(
    env: Env, server: ScriptedServer, thread: str, mode: str
) -> None:
    args = [mode, "hi"] if mode == "-p" else [mode]
    result = trove(*env.common, "--thread", thread, *args, stdin=_lines(mode, "hi"))
    assert result.returncode == 2, (result.stdout, result.stderr)
    line = _one_line(result.stderr)
    assert thread in line
    assert server.requests == []
    assert _logs(env.home) == [], "an unknown --thread must not create a thread"


@pytest.mark.parametrize("mode", ["-p", "--plain"])
def test_corrupt_log_in_a_resumed_thread_is_one_line_with_file_and_line_and_the_turn_runs(
    env: Env, server: ScriptedServer, mode: str
) -> None:
    """The line before the damage is what loads; the damage and what follows are set aside
    (said in one line, once), and the thread takes its next turn with the next seq."""
    server.script(s.text("fine"), s.text("after the repair"))
    assert trove(*env.common, "-p", "before the damage").returncode == 0
    thread_id, _ = _only_log(env.home)
    path = _logs(env.home)[0]
    lines = path.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if b'"inbox/queued"' in line) + 1
    lines[at] = b"{this is not json\n"  # the line after the queued prompt
    damaged = b"".join(lines)
    path.write_bytes(damaged)

    args = [mode, "after"] if mode == "-p" else [mode]
    result = trove(*env.common, "--thread", thread_id, *args, stdin=_lines(mode, "after"))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    assert "after the repair" in result.stdout
    # Said once, in one line (--plain also says the typed line queued behind the prompt
    # the prefix held: that one's user/message was set aside with the damage).
    (line,) = [line for line in result.stderr.splitlines() if "session.jsonl" in line]
    assert f"{path}:{at + 1}: not valid JSON" in line, line
    kept = [p for p in path.parent.iterdir() if p.name.startswith("session.jsonl.quarantine-")]
    assert len(kept) == 1 and kept[0].name in line
    assert kept[0].read_bytes() == b"".join(lines[at:]), "every byte set aside is kept"
    events = read_events(path).events
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert path.read_bytes().startswith(b"".join(lines[:at]))
    assert [e.text for e in of_kind(events, ev.UserMessage)] == ["before the damage", "after"]


@pytest.mark.parametrize("mode", ["-p", "--plain"])
def test_torn_tail_in_a_resumed_thread_is_reported_and_the_turn_runs(
    env: Env, server: ScriptedServer, mode: str
) -> None:
    server.script(s.text("first"), s.text("second"))
    assert trove(*env.common, "-p", "q1").returncode == 0
    thread_id, events = _only_log(env.home)
    path = _logs(env.home)[0]
    torn = json.dumps({"seq": len(events) + 1, "ts": "x", "kind": "user/mess"})[:30].encode()
    with path.open("ab") as fh:
        fh.write(torn)

    args = [mode, "q2"] if mode == "-p" else [mode]
    result = trove(*env.common, "--thread", thread_id, *args, stdin=_lines(mode, "q2"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "second"
    assert result.stderr.strip(), (
        f"BUG: trove {mode} resumed a thread with a torn last line but never reported it "
        "(the report is only made once: the torn bytes are moved aside on open)"
    )
    line = _one_line(result.stderr)
    assert f"{path}:{len(events) + 1}" in line, line
    kept = [p for p in path.parent.iterdir() if p.name.startswith("session.jsonl.torn")]
    assert len(kept) == 1 and kept[0].read_bytes() == torn
    reloaded = read_events(path)
    assert reloaded.torn is None
    assert [e.text for e in reloaded.events if isinstance(e, ev.UserMessage)] == ["q1", "q2"]
