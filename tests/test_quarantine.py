"""Issue 30 item 2: a log that breaks its seq order still loads.

Reported: a second writer (or a hand edit, or a sync tool) left lines out of
seq order in the middle of a log, and the whole thread stopped loading until
a person edited the file (`session.jsonl:48: expected seq 48, found 44`).
Now every reader loads the consistent prefix and names the bad line without
changing a file; the writer moves the bad line and everything after it to a
quarantine file beside the log (every byte), says so once, and goes on with
the next seq; `trove doctor THREAD` reports and repairs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.log import read_events, snapshot
from engine.threads.lock import ThreadLock
from engine.threads.thread import Thread
from tests.cli_support import Env, trove
from tests.support import of_kind

TID = "t-dup"
TS = "2025-01-01T00:00:00.000Z"


def _two_writers(home: Path) -> tuple[Path, bytes, int]:
    """A thread of 8 events whose log then got seqs 4 and 5 again (a second writer that
    read the log at seq 3) and then 9 from the first writer: line 9 reads seq 4.

    Returns the log, its bytes, and how many bytes its consistent prefix takes."""
    thread = Thread.create(home, "local", TID)
    for i in range(4):
        thread.log.append(ev.UserMessage(text=f"question {i}"))
        thread.log.append(ev.AssistantMessage(content=f"answer {i}"))
    thread.close()
    path = thread.log.path
    good = path.read_bytes()
    intruder = b"".join(
        json.dumps({"seq": seq, "ts": TS, "kind": "user/message", "text": text}).encode() + b"\n"
        for seq, text in ((4, "the other writer"), (5, "the other writer again"), (9, "late"))
    )
    path.write_bytes(good + intruder)
    return path, path.read_bytes(), len(good)


def _files(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in directory.iterdir()}


def _quarantines(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if ".quarantine-" in p.name)


def test_an_out_of_order_line_loads_the_prefix_says_so_once_and_goes_on(
    env: Env, server: ScriptedServer
) -> None:
    server.script(s.text("back on track"), s.text("still fine"))
    path, damaged, good = _two_writers(env.home)

    first = trove(*env.common, "--thread", TID, "--plain", stdin="next question\n")
    assert first.returncode == 0, first.stderr
    assert "back on track" in first.stdout
    (notice,) = [line for line in first.stderr.splitlines() if "session.jsonl" in line]
    assert f"{path}:9: expected seq 9, found 4" in notice
    assert "loaded the 8 events before it" in notice
    (kept,) = _quarantines(path.parent)
    assert kept.name in notice
    assert kept.read_bytes() == damaged[good:], "the quarantine holds exactly the bytes removed"
    assert path.read_bytes().startswith(damaged[:good])

    events = read_events(path).events
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    seam = of_kind(events, ev.EndSeed)[0]
    assert (seam.seq, seam.previous) == (9, 8), "the next append takes the seq after the prefix"
    said = [e.text for e in of_kind(events, ev.UserMessage)]
    assert said == [f"question {i}" for i in range(4)] + ["next question"]

    again = trove(*env.common, "--thread", TID, "--plain", stdin="and again\n")
    assert again.returncode == 0, again.stderr
    assert "session.jsonl" not in again.stderr and "quarantine" not in again.stderr
    assert _quarantines(path.parent) == [kept] and kept.read_bytes() == damaged[good:]
    events = read_events(path)
    assert events.damage is None
    assert [e.seq for e in events.events] == list(range(1, len(events.events) + 1))


def test_threads_json_reports_the_problem_and_changes_no_file(env: Env) -> None:
    path, damaged, _ = _two_writers(env.home)
    before = _files(path.parent)
    listed = trove(*env.common, "threads", "--json")
    assert listed.returncode == 0, listed.stderr
    (item,) = json.loads(listed.stdout)
    assert item["problem"] == "session.jsonl:9: expected seq 9, found 4"
    assert (item["messages"], item["compactions"]) == (8, 0), "the prefix is counted"
    human = trove(*env.common, "threads")
    assert "[damaged: session.jsonl:9: expected seq 9, found 4" in human.stdout
    assert f"trove doctor {TID}" in human.stdout
    assert _files(path.parent) == before, "a reader changes no file (and caches no summary)"
    search = trove(*env.common, "--thread", TID, "history", "search", "question", "--json")
    assert search.returncode == 0, search.stderr
    assert json.loads(search.stdout)["results"], "the prefix is searched"
    (line,) = search.stderr.splitlines()
    assert f"{path}:9: expected seq 9, found 4" in line
    assert _files(path.parent) == before


def test_doctor_reports_and_repairs_and_then_finds_it_healthy(env: Env) -> None:
    path, damaged, good = _two_writers(env.home)
    result = trove(*env.common, "doctor", TID, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    (kept,) = _quarantines(path.parent)
    assert report["thread"] == TID and report["status"] == "repaired"
    assert report["held_by"] is None and report["kept"] == [kept.name]
    (problem,) = report["problems"]
    assert (problem["file"], problem["line"]) == ("session.jsonl", 9)
    assert problem["problem"].startswith("session.jsonl:9: expected seq 9, found 4")
    assert problem["repaired"] == f"moved {len(damaged) - good} bytes to {kept.name}"
    assert kept.read_bytes() == damaged[good:] and path.read_bytes() == damaged[:good]

    healthy = trove(*env.common, "doctor", "--thread", TID)
    assert healthy.returncode == 0, healthy.stderr
    assert healthy.stdout.splitlines()[0] == f"thread {TID}: healthy"
    assert f"kept beside the log: {kept.name}" in healthy.stdout
    listed = json.loads(trove(*env.common, "threads", "--json").stdout)
    assert listed[0]["problem"] is None


def test_doctor_cannot_repair_a_thread_another_process_writes(env: Env) -> None:
    path, damaged, _ = _two_writers(env.home)
    lock = ThreadLock.acquire(path.parent, TID)  # "another process" has the thread
    try:
        before = _files(path.parent)
        result = trove(*env.common, "doctor", TID)
        assert result.returncode == 1
        assert result.stdout.splitlines()[0].startswith(f"thread {TID}: damaged (open in")
        assert "session.jsonl:9: expected seq 9, found 4" in result.stdout
        (line,) = result.stderr.splitlines()
        assert f"thread {TID} not repaired" in line and "pid " in line
        assert _files(path.parent) == before
    finally:
        lock.release()


def test_doctor_repairs_a_torn_tail_and_removes_a_snapshot_that_does_not_match(
    env: Env,
) -> None:
    thread = Thread.create(env.home, "local", TID)
    thread.log.append(ev.UserMessage(text="whole"))
    thread.close()
    path = thread.log.path
    stale = snapshot.path_for(path)
    stale.write_bytes(b"not a snapshot")
    with path.open("ab") as fh:
        fh.write(b'{"seq":2,"ts"')
    result = trove(*env.common, "doctor", TID)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"thread {TID}: repaired"
    assert any("session.jsonl:2: a torn last line (13 bytes)" in line for line in lines)
    assert any(
        f"{stale.name}: damaged, or not about this log (not used); repaired: removed" in line
        for line in lines
    )
    assert not stale.exists()
    (torn,) = [p for p in path.parent.iterdir() if ".torn-" in p.name]
    assert torn.read_bytes() == b'{"seq":2,"ts"'


def test_doctor_usage_errors_exit_2_in_one_line(env: Env) -> None:
    for args in (["doctor"], ["doctor", "nope"], ["doctor", "a", "--thread", "b"]):
        result = trove(*env.common, *args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


async def test_a_compaction_reusing_a_quarantined_compactions_seq_archives_its_own(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """The known gap of issue 30: archive batches are keyed by their `compact/start` seq.
    A compaction in the part of the log a quarantine set aside left its batch behind;
    the log then hands the same seq to a new compaction, whose capture used to come
    back as that old batch's "duplicate": the new originals were never archived, and
    a fact that left the context with them could not be found (status `available`)."""
    from engine.config import load_config
    from engine.runtime import Runtime
    from engine.workspace.reports import cli_search
    from tests.support import client_for

    config_path = tmp_path / "config.yaml"
    config_path.write_text(
        f"model:\n  base_url: {server.base_url}\n  api_key: k\n  max_retries: 0\n"
        "compaction:\n  auto: false\n  keep_recent_tokens: 0\n"
    )
    config = load_config(config_path, home=tmp_path)
    Thread.create(tmp_path, "local", TID).close()
    server.script(s.text("noted one"), s.text("noted two"), s.text("A summary, no codes."))
    rt = Runtime.open(config, tmp_path, thread_id=TID, model=client_for(server))
    for text in ("the first code is ALPHA-1111", "the second code is ALPHA-2222"):
        rt.driver.send(text)
        await rt.driver.when_idle()
    second = of_kind(rt.thread.log.events, ev.InboxQueued)[1].seq
    for _ in range(3):  # room for the seam the reopen logs, so the seqs can meet again
        rt.driver.inject("padding")
    assert (await rt.commands.run("/compact")).ok
    old_start = of_kind(rt.thread.log.events, ev.CompactStart)[0].seq
    path = rt.thread.log.path
    await rt.aclose()

    # The second prompt's line is damaged: it and the compaction after it are set aside.
    lines = path.read_bytes().splitlines(keepends=True)
    lines[second - 1] = b"not json\n"
    path.write_bytes(b"".join(lines))

    server.script(s.text("noted three"), s.text("Another summary, no codes."))
    rt = Runtime.open(config, tmp_path, thread_id=TID, model=client_for(server))
    log = rt.thread.log
    assert rt.notices and "quarantine" in rt.notices[0]
    rt.driver.send("the new code is BRAVO-3333")
    await rt.driver.when_idle()
    while log.next_seq < old_start - 1:  # /compact logs command/run, then compact/start
        rt.driver.inject("padding")
    assert (await rt.commands.run("/compact")).ok
    assert of_kind(log.events, ev.CompactStart)[-1].seq == old_start, "the seq is reused"
    await rt.aclose()

    for code in ("ALPHA-1111", "BRAVO-3333"):
        found = cli_search(tmp_path, "local", TID, code)
        assert found["status"] == "available", found
        assert any(code in hit["excerpt"] for hit in found["results"]), (code, found)


def test_a_repair_does_not_wait_on_a_fifo_where_the_snapshot_was(env: Env) -> None:
    """The writer's repair removes a replay snapshot covering bytes it sets aside; it used
    to open whatever was under the snapshot's name to read its header, and a FIFO there
    (no writer ever comes) hung `trove doctor` and the thread's open for good."""
    path, damaged, good = _two_writers(env.home)
    fifo = snapshot.path_for(path)
    os.mkfifo(fifo)
    result = trove(*env.common, "doctor", TID, timeout=20)
    assert result.returncode == 0, result.stderr
    assert not fifo.exists(), "not the log's snapshot: removed like a damaged one"
    (kept,) = _quarantines(path.parent)
    assert kept.read_bytes() == damaged[good:] and path.read_bytes() == damaged[:good]
