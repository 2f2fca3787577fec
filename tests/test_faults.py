"""The fault suite: every compaction point × {SIGKILL, exception, cancel} × {manual,
pressure, overflow}.

A child process (tests/fault_child.py) plants facts, starts the compaction
and meets the fault. Then, as a user would, the thread is read without the
lock (a reader sees only truthful statuses), and resumed (the writer repairs
what a crash left). What must hold after every combination:

- nothing typed is lost: every queued prompt is delivered or queued again;
- no bracket is left live, and /compact and a new prompt work;
- the log loads;
- every planted fact that left the context is found word for word, or the
  archive status says `unavailable` (before the resume as well as after);
- after the resume every fact is found: what a crash or a failed capture left
  out of the archive is captured again from the log.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from devtools import scripted_server as s
from engine import events as ev
from engine.config import load_config
from engine.log import read_events
from engine.runtime import INTERRUPTED_COMPACTION, Runtime
from engine.surface import Surface
from engine.threads.draft import withdrawn_text
from engine.threads.paths import LOG_NAME, thread_dir
from engine.threads.thread import Thread
from engine.workspace.reports import cli_search
from tests.fault_child import FACTS, FAULTS, MODES, POINTS
from tests.support import client_for, of_kind

ROOT = Path(__file__).resolve().parent.parent
THREAD = "faults"
CASES = [
    (mode, fault, point)
    for mode in MODES
    for fault in FAULTS
    for point in POINTS
    if not (point == "flushed" and mode != "manual")
]


def _script(server: s.ScriptedServer, mode: str) -> None:
    summary = s.text("A summary that names no codes.")
    answers = [s.text("noted one"), s.text("noted two")]
    if mode == "manual":
        server.script(*answers, summary)
    elif mode == "pressure":
        server.script(*answers, summary, s.text("noted three"))
    else:
        server.script(*answers, s.overflow(), summary, s.text("noted three"))


def _config(tmp_path: Path, server: s.ScriptedServer) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        f"model:\n  base_url: {server.base_url}\n  api_key: k\n  max_retries: 0\n"
        "  context_window: 100000\n"
        "compaction:\n  auto: false\n  keep_recent_tokens: 0\n"
    )
    return path


def _delivered_facts(events: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(fact, seq) for each fact in a prompt that reached the conversation and stayed: a
    prompt its failed turn withdrew (an overflow the compaction could not relieve) never
    reached the model's history; it was given back to be sent again."""
    withdrawn = {seq for end in of_kind(events, ev.TurnEnd) for seq in end.withdrawn}
    found = []
    for event in of_kind(events, ev.UserMessage):
        if event.item_id is None or event.seq in withdrawn:
            continue
        found.extend((fact, event.seq) for fact in FACTS if fact in event.text)
    return found


def _unaccounted(home: Path, events: list[dict[str, Any]]) -> list[str]:
    """Facts that left the context and can neither be found nor are reported unavailable."""
    on_surface = {e.seq for e in Surface.from_events(events).entries}
    problems = []
    for fact, seq in _delivered_facts(events):
        if seq in on_surface:
            continue
        result = cli_search(home, "local", THREAD, fact)
        if any(fact in hit["excerpt"] for hit in result["results"]):
            continue
        if result["status"] != "unavailable":
            problems.append(f"{fact} (seq {seq}) is gone, status {result['status']!r}")
    return problems


def _findable(home: Path, events: list[dict[str, Any]]) -> list[str]:
    """Facts that cannot be found word for word (on the surface or in the archive)."""
    missing = []
    for fact, _ in _delivered_facts(events):
        result = cli_search(home, "local", THREAD, fact)
        if not any(fact in hit["excerpt"] for hit in result["results"]):
            missing.append(f"{fact}: {result['status']}")
    return missing


async def _meet_fault(tmp_path: Path, server, mode: str, fault: str, point: str) -> Path:
    """Run tests/fault_child.py on a new thread in `tmp_path` (the home); its config path."""
    config_path = _config(tmp_path, server)
    Thread.create(tmp_path, "local", THREAD).close()
    _script(server, mode)
    env = {key: v for key, v in os.environ.items() if not key.startswith("OPENAI_")}
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.fault_child",
        str(tmp_path),
        str(config_path),
        THREAD,
        mode,
        fault,
        point,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(child.communicate(), 60)
    expected = -signal.SIGKILL if fault == "kill" else 0
    assert child.returncode == expected, err.decode()[-2000:]
    return config_path


@pytest.mark.parametrize(("mode", "fault", "point"), CASES)
async def test_a_fault_anywhere_in_compaction_loses_nothing(tmp_path, server, mode, fault, point):
    home = tmp_path
    config_path = await _meet_fault(tmp_path, server, mode, fault, point)

    # A reader, before anyone repairs anything: the log loads, statuses are truthful.
    log_path = thread_dir(home, "local", THREAD) / LOG_NAME
    events = read_events(log_path).events
    assert _unaccounted(home, events) == []

    # The user comes back.
    config = load_config(config_path, home=home)
    rt = Runtime.open(config, home, thread_id=THREAD, model=client_for(server))
    try:
        log = rt.thread.log
        assert log.tail.open_compact is None
        queued = {e.seq: e.text for e in of_kind(log.events, ev.InboxQueued)}
        # A prompt is in the conversation, still queued, or was given back to be sent
        # again (a turn that failed before any reply withdrew it: engine.threads.draft).
        ends = of_kind(log.events, ev.TurnEnd)
        given_back = "\n\n".join(withdrawn_text(log, end) for end in ends if end.withdrawn)
        withdrawn = {seq for end in ends for seq in end.withdrawn}
        messages = [e for e in of_kind(log.events, ev.UserMessage) if e.item_id is not None]
        delivered = {e.item_id for e in messages if e.seq not in withdrawn}
        returned = {e.item_id for e in messages if e.seq in withdrawn and e.text in given_back}
        waiting = {item.id for item in rt.driver.inbox}
        lost = [text for seq, text in queued.items() if seq not in delivered | waiting | returned]
        assert lost == []
        assert _unaccounted(home, log.events) == []
        assert _findable(home, log.events) == []  # a failed capture is retried on open
        # Usable: a prompt runs (taking any queued input with it), /compact is not wedged.
        server.script(s.text("back again"))
        rt.driver.send("after restart")
        await asyncio.wait_for(rt.driver.when_idle(), 20)
        assert of_kind(log.events, ev.TurnEnd)[-1].status == "ok"
        assert not rt.driver.inbox
        server.script(s.text("A later summary."))
        result = await rt.commands.run("/compact")
        assert result.ok, result.text
    finally:
        await rt.aclose()
    assert isinstance(read_events(log_path).events[-1], (ev.CommandDone, ev.CompactEnd))


@pytest.mark.parametrize("point", ["summary", "checkpoint", "archiving", "archived"])
async def test_a_kill_around_the_archive_write_resumes_with_a_true_notice(tmp_path, server, point):
    """Issue 25 item 7: killed after its checkpoint (the archive write is the step after
    it), /compact has replaced the span, and the next open says so and where the
    originals are (recovered from the log as it opened), not "nothing was lost". Killed
    before it (a summary line alone replaces nothing), nothing was lost."""
    config_path = await _meet_fault(tmp_path, server, "manual", "kill", point)
    config = load_config(config_path, home=tmp_path)
    rt = Runtime.open(config, tmp_path, thread_id=THREAD, model=client_for(server))
    try:
        said = [notice for notice in rt.notices if "Trove last quit" in notice]
        compacted = rt.driver.surface.entries[0].checkpoint
        if point == "summary":
            assert said == [INTERRUPTED_COMPACTION] and not compacted
        else:
            [archived] = of_kind(rt.thread.log.events, ev.CompactArchived)
            assert archived.recovered and compacted
            assert said == [
                "The compaction that was running when Trove last quit had already replaced 4 "
                "messages with its summary: the conversation is compacted. Its originals are "
                f"archived (batch {archived.archive['batch']}, recovered from the log as this "
                "thread opened): history search can read them."
            ]
    finally:
        await rt.aclose()
