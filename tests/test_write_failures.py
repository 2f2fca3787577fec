"""A disk that fails mid-turn: the turn ends in one line, the driver is idle
again, nothing typed is lost, and the log keeps loading with the right seqs.

Reported: disk full during a reply showed nothing, `/compact` said busy
forever, new prompts queued and never ran, and once space returned the failed
line and the next event shared a seq, so the thread no longer loaded. Same
with RLIMIT_FSIZE, silently.
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from devtools import scripted_server as s
from engine import events as ev
from engine.driver import Driver
from engine.log import LogWriteError, SessionLog, read_events
from tests.cli_support import REPO, _clean_env
from tests.support import client_for, of_kind, opened


class Disk:
    """Fills up on the lines of chosen kinds (half of the line lands first), or for
    every line while `full` is set."""

    def __init__(self, log: SessionLog) -> None:
        self.kinds: set[type[ev.Event] | None] = set()
        self.full = False
        self._cut = False
        real = log._raw_write

        def write(fd: int, data: bytes) -> int:
            if self._cut or self.full:
                self._cut = False
                raise OSError(28, "No space left on device")
            kind = ev.KINDS.get(orjson.loads(data)["kind"])
            if kind in self.kinds:
                self.kinds.discard(kind)
                self._cut = True
                return real(fd, data[: len(data) // 2])
            return real(fd, data)

        log._raw_write = write  # type: ignore[method-assign]


class Failures:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def on_delta(self, turn: int, text: str) -> None:
        pass

    def on_state(self) -> None:
        pass

    def on_failure(self, text: str) -> None:
        self.lines.append(text)


def _driver(tmp_path: Path, server) -> tuple[Driver, Disk, Failures]:
    log = SessionLog.open(tmp_path / "session.jsonl")
    driver = opened(Driver(log, client_for(server)))
    failures = Failures()
    driver.observers.append(failures)
    return driver, Disk(log), failures


def _loads_in_order(path: Path) -> list[dict]:
    events = read_events(path).events
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    return events


async def test_a_full_disk_during_the_reply_ends_the_turn_in_one_line(tmp_path, server):
    driver, disk, _ = _driver(tmp_path, server)
    disk.kinds = {ev.AssistantMessage}
    server.script(s.text("a reply the disk cannot take"), s.text("the next answer"))
    driver.send("first question")
    await asyncio.wait_for(driver.when_idle(), 10)
    end = of_kind(driver.log.events, ev.TurnEnd)[-1]
    assert end.status == "error" and "\n" not in end.error
    assert "No space left on device" in end.error
    # Space is back: the next prompt runs, and the log loads with contiguous seqs.
    driver.send("second question")
    await asyncio.wait_for(driver.when_idle(), 10)
    assert of_kind(driver.log.events, ev.TurnEnd)[-1].status == "ok"
    await driver.aclose()
    events = _loads_in_order(driver.log.path)
    said = [e.text for e in of_kind(events, ev.UserMessage)]
    assert said == ["first question", "second question"]
    driver.log.close()


async def test_a_disk_that_stays_full_still_leaves_the_driver_idle(tmp_path, server):
    driver, disk, failures = _driver(tmp_path, server)
    server.script(s.text("never stored", hold="before"), s.text("after space returned"))
    driver.send("asked before the disk filled up")
    await server.wait_requests(1)
    disk.full = True
    server.release()
    await asyncio.wait_for(driver.when_idle(), 10)  # not wedged
    assert driver.running_turn is None
    assert len(failures.lines) == 1 and "\n" not in failures.lines[0]  # one clear line
    assert "No space left on device" in failures.lines[0]
    # Input while the disk is full is refused, so the caller keeps it.
    with pytest.raises(LogWriteError):
        driver.send("typed while full")
    release = driver.reserve_turn_admission()
    assert release is not None  # /compact would not say busy
    release()
    disk.full = False
    driver.send("typed after space returned")
    await asyncio.wait_for(driver.when_idle(), 10)
    assert of_kind(driver.log.events, ev.TurnEnd)[-1].status == "ok"
    await driver.aclose()
    events = _loads_in_order(driver.log.path)
    said = [e.text for e in of_kind(events, ev.UserMessage)]
    assert said == ["asked before the disk filled up", "typed after space returned"]
    driver.log.close()


async def test_input_that_never_became_a_message_is_queued_again(tmp_path, server):
    """The turn could not even start: its prompt stays queued (quietly), not lost."""
    driver, disk, failures = _driver(tmp_path, server)
    disk.kinds = {ev.TurnStart}
    item = driver.send("do not lose me")
    await asyncio.wait_for(driver.when_idle(), 10)
    assert [queued.id for queued in driver.inbox] == [item]
    assert len(failures.lines) == 1 and "No space left on device" in failures.lines[0]
    driver.send("and now")  # the next waking prompt takes the quiet one along
    await asyncio.wait_for(driver.when_idle(), 10)
    said = [e.text for e in of_kind(driver.log.events, ev.UserMessage)]
    assert said == ["do not lose me", "and now"]
    await driver.aclose()
    _loads_in_order(driver.log.path)
    driver.log.close()


def _limit_file_size(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_file_size_limit_is_one_line_per_failure_and_the_log_still_loads(env, server):
    """The real thing: RLIMIT_FSIZE makes write() fail with EFBIG part-way through."""
    from engine.threads.thread import Thread

    thread = Thread.create(env.home, "local", "capped")
    thread.log.append(ev.UserMessage(text="before the cap"))
    thread.close()
    size = thread.log.path.stat().st_size
    server.script(*[s.text("x" * 600) for _ in range(4)])
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", *env.common, "--thread", "capped", "--plain"],
        input="".join(f"question {i}\n" for i in range(4)),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_clean_env(),
        timeout=60,
        preexec_fn=lambda: _limit_file_size(size + 700),
    )
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors and all("File too large" in line for line in errors), result.stderr
    assert result.returncode == 1
    events = _loads_in_order(thread.log.path)  # whatever got in, it loads
    assert os.path.getsize(thread.log.path) <= size + 700
    resumed = Thread.resume(env.home, "local", "capped")  # and it resumes
    assert isinstance(resumed.log.events[-1], ev.EndSeed)
    assert resumed.log.events[-1].seq == len(events) + 1
    resumed.close()
