"""The command line's everyday parts (issue 28, point 5): `--version`, the resume hint
as typed, `history read ID` without `--thread`, and `/export PATH`."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.threads.thread import Thread
from engine.util.invocation import trove_command
from tests.cli_support import Env, trove


def _thread_ids(home: Path) -> list[str]:
    return sorted(p.parent.name for p in (home / "users" / "local" / "threads").glob("*/*.jsonl"))


def test_version_prints_the_installed_version_and_exits_0(tmp_path: Path) -> None:
    from importlib.metadata import version

    result = trove("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"trove {version('trove')}"
    assert result.stderr == ""


# -- the resume hint -----------------------------------------------------------------------


def _script(folder: Path, name: str = "trove") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_hint_says_trove_when_trove_on_path_is_the_command_that_ran(tmp_path: Path) -> None:
    script = _script(tmp_path / "bin")
    assert trove_command(str(script), path=str(tmp_path / "bin")) == "trove"


def test_the_hint_gives_the_full_path_when_trove_is_not_on_path(tmp_path: Path) -> None:
    script = _script(tmp_path / "my venv" / "bin")
    relative = os.path.relpath(script)
    assert trove_command(relative, path=str(tmp_path / "elsewhere")) == f"'{script}'"


def test_the_hint_gives_the_full_path_when_path_has_another_trove(tmp_path: Path) -> None:
    script = _script(tmp_path / "venv" / "bin")
    _script(tmp_path / "bin")  # an older install first on PATH
    assert trove_command(str(script), path=str(tmp_path / "bin")) == str(script)


def test_the_hint_names_python_m_when_run_as_a_module(tmp_path: Path) -> None:
    import sys

    main = Path(__file__).resolve().parent.parent / "cli" / "main.py"
    assert trove_command(str(main), path="") == f"{sys.executable} -m cli.main"


# -- history read ID finds its thread ------------------------------------------------------


def _thread(home: Path, thread_id: str, *prompts: str) -> None:
    thread = Thread.create(home, "local", thread_id)
    for prompt in prompts:
        thread.log.append(ev.UserMessage(text=prompt))
        thread.log.append(ev.AssistantMessage(content=f"answer to {prompt}"))
    thread.close()


def test_history_read_finds_the_thread_of_an_id_that_search_all_printed(env: Env) -> None:
    _thread(env.home, "a-older", "the zebra crossing question")
    _thread(env.home, "b-newer", "something else entirely")
    found = trove("history", "search", "zebra", "--all", "--role", "user", "--json", *env.common)
    assert found.returncode == 0, found.stderr
    (group,) = json.loads(found.stdout)["threads"]
    assert group["thread"] == "a-older"
    source = group["results"][0]["id"]

    page = trove("history", "read", source, *env.common)
    assert page.returncode == 0, page.stderr
    assert page.stdout.strip() == "the zebra crossing question"
    as_json = trove("history", "read", source, "--json", *env.common)
    assert json.loads(as_json.stdout)["text"] == "the zebra crossing question"


def test_history_read_finds_an_archived_source_in_an_older_thread(env: Env) -> None:
    from tests.test_search_all import made

    made(env.home, "local", "20250101-old", "The vault code is quartz-77 keep it")
    made(env.home, "local", "20250301-new", "Nothing to see here")
    made(env.home, "someone-else", "20250303-theirs", "quartz-77 is theirs")
    found = trove("history", "search", "quartz-77", "--all", "--json", *env.common)
    (group,) = json.loads(found.stdout)["threads"]
    (hit,) = group["results"]
    assert hit["origin"] == "archive"
    page = trove("history", "read", hit["id"], "--json", *env.common)
    assert page.returncode == 0, page.stderr
    assert json.loads(page.stdout)["text"] == "The vault code is quartz-77 keep it"
    theirs = trove("history", "read", hit["id"], "--user", "someone-else", *env.common)
    assert theirs.returncode == 1  # another user's thread is never read


def test_history_read_of_an_id_no_thread_holds_says_so_once(env: Env) -> None:
    _thread(env.home, "a", "one question")
    result = trove("history", "read", "r" + "0" * 32, *env.common)
    assert result.returncode == 1
    assert "no thread of user 'local' holds source r" in result.stdout + result.stderr


def test_history_read_with_thread_still_reads_only_that_thread(env: Env) -> None:
    _thread(env.home, "a-older", "the zebra crossing question")
    _thread(env.home, "b-newer", "something else entirely")
    found = trove("history", "search", "zebra", "--thread", "a-older", "--json", *env.common)
    source = json.loads(found.stdout)["results"][0]["id"]
    result = trove("history", "read", source, "--thread", "b-newer", *env.common)
    assert result.returncode == 1
    assert "no source" in result.stdout


# -- /export PATH ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "written"),
    [
        ("notes.md", ["notes.md"]),
        ("notes.txt", ["notes.txt"]),
        ("dump.json", ["dump.json"]),
        ("out/", ["out/{id}.md", "out/{id}.json"]),
    ],
)
def test_export_to_a_path(
    env: Env, server: ScriptedServer, tmp_path: Path, given: str, written: list[str]
) -> None:
    server.script(s.text("Paris is the capital."))
    (tmp_path / "out").mkdir()
    target = tmp_path / given
    result = trove("--plain", *env.common, stdin=f"capital of France?\n/export {target}\n")
    assert result.returncode == 0, result.stderr
    (thread_id,) = _thread_ids(env.home)
    paths = [tmp_path / name.format(id=thread_id) for name in written]
    assert result.stdout.strip().endswith("Exported to " + " and ".join(map(str, paths)))
    for path in paths:
        text = path.read_text()
        if path.suffix == ".json":
            assert json.loads(text)["thread"] == thread_id
        else:
            assert "## Assistant\n\nParis is the capital." in text
    assert not (env.home / "exports").exists()


def test_export_to_a_folder_that_does_not_exist_is_one_line(
    env: Env, server: ScriptedServer, tmp_path: Path
) -> None:
    server.script(s.text("Paris is the capital."))
    target = tmp_path / "missing" / "notes.md"
    result = trove("--plain", *env.common, stdin=f"capital of France?\n/export {target}\n")
    assert f"/export: no folder {target.parent}" in result.stderr
    assert not target.parent.exists()
