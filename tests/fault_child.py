"""A trove process that meets one fault at one point of one kind of compaction.

    python -m tests.fault_child HOME CONFIG THREAD MODE FAULT POINT

MODE is how the compaction starts (manual `/compact`, pressure before a
request, overflow after a 400); POINT is where in the transaction the fault
lands; FAULT is what happens there:

- kill: SIGKILL, no clean-up of any kind;
- raise: the operation at that point fails (the append hits a full disk, the
  summarizer or the archive raises, fsync fails);
- cancel: the task running the compaction is cancelled (Esc, or shutdown).

After raise and cancel the process checks its own state (the bracket closed
unless its end could not be written, the driver idle) and exits 0 after a
clean close; anything else exits 4 with the reason on stderr.
tests/test_faults.py restarts the thread afterwards and checks the rest.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from engine import events as ev
from engine.config import load_config
from engine.continuity.archive.store import ArchiveStore
from engine.log import parse_line
from engine.runtime import Runtime

PROMPTS = ("one: the code is ALPHA-1111", "two: the code is BRAVO-2222")
THIRD = "three: the code is CHARLIE-3333"
TYPED_DURING = "typed during compaction: the code is DELTA-4444"
FACTS = ("ALPHA-1111", "BRAVO-2222", "CHARLIE-3333", "DELTA-4444")
MODES = ("manual", "pressure", "overflow")
FAULTS = ("kill", "raise", "cancel")
POINTS = (
    "start",  # compact/start written
    "summarized",  # the summary came back
    "summary",  # compact/summary written
    "checkpoint",  # the checkpoint written: the capture window opens
    "archiving",  # inside the archive write, before it commits
    "archived",  # the archive write returned
    "closed",  # compact/end written
    "flushed",  # fsync done (manual only: automatic compaction does not flush)
)
APPEND_POINTS: dict[type, str] = {
    ev.CompactStart: "start",
    ev.CompactSummary: "summary",
    ev.CompactEnd: "closed",
}


def _target(event: ev.LogEvent) -> str | None:
    """The fault point an event's append reaches, if any."""
    if isinstance(event, ev.UserMessage) and event.checkpoint is not None:
        return "checkpoint"
    return APPEND_POINTS.get(type(event))


class Fault(Exception):
    """The injected non-compaction failure."""


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


async def main(
    home: Path, config_path: Path, thread_id: str, mode: str, fault: str, point: str
) -> int:
    config = load_config(config_path, home=home)
    rt = Runtime.open(config, home, thread_id=thread_id)
    log, driver = rt.thread.log, rt.driver
    for prompt in PROMPTS:
        driver.send(prompt)
        await driver.when_idle()
    loop = asyncio.get_running_loop()
    victim: list[asyncio.Task[Any]] = []
    once = {"struck": False, "typed": False}

    def due(where: str) -> bool:
        """The fault lands once, at the first compaction that reaches `point`."""
        if where != point or once["struck"]:
            return False
        once["struck"] = True
        return True

    def strike(where: str) -> None:
        """At `where`: kill, or cancel the compaction's task (raise is per operation)."""
        if fault == "raise" or not due(where):
            return
        if fault == "kill":
            die()
        if fault == "cancel":
            task = driver._turn_task if mode != "manual" else (victim[0] if victim else None)
            if task is not None:
                loop.call_soon_threadsafe(task.cancel, "fault: cancel")

    # The user types while the compaction runs.
    def on_event(event: ev.LogEvent) -> None:
        if isinstance(event, ev.CompactStart) and not once["typed"]:
            once["typed"] = True
            driver.send(TYPED_DURING)

    log.subscribe(on_event)

    # Appends: strike after the line is written; a raise is a disk that is full
    # for exactly that line (half of it reaches the file first).
    raw_write = log._raw_write
    full = {"armed": False}

    def write(fd: int, data: bytes) -> int:
        if full["armed"]:
            full["armed"] = False
            raise OSError(28, "No space left on device")
        event = parse_line(log.path, log.next_seq, data[:-1]) if data.endswith(b"\n") else None
        target = _target(event) if event is not None else None
        if fault == "raise" and target is not None and due(target):
            full["armed"] = True
            return raw_write(fd, data[: len(data) // 2])
        return raw_write(fd, data)

    log._raw_write = write  # type: ignore[method-assign]
    append = log.append

    def append_and_strike(payload: Any) -> Any:
        event = append(payload)
        target = _target(event)
        if target is not None:
            strike(target)
        return event

    log.append = append_and_strike  # type: ignore[method-assign]

    complete = rt.model.complete

    async def summarize_and_strike(messages: Any, **kw: Any) -> Any:
        result = await complete(messages, **kw)
        if log.tail.open_compact is not None:  # this was the summary request
            if fault == "raise" and due("summarized"):
                raise Fault("the summarizer broke")
            strike("summarized")
        return result

    rt.model.complete = summarize_and_strike  # type: ignore[method-assign]

    store = rt.continuity.store if rt.continuity is not None else None
    assert isinstance(store, ArchiveStore)
    capture = store.capture

    def capture_and_strike(batch_key: int, records: Any) -> Any:  # runs in a worker thread
        if fault == "raise" and due("archiving"):
            raise Fault("the archive broke")
        strike("archiving")
        result = capture(batch_key, records)
        if fault == "raise" and due("archived"):
            raise Fault("the archive broke after writing")
        strike("archived")
        return result

    store.capture = capture_and_strike  # type: ignore[method-assign]

    flush = log.flush

    def flush_and_strike() -> None:
        if fault == "raise" and due("flushed"):
            raise OSError(5, "Input/output error")
        flush()
        strike("flushed")

    log.flush = flush_and_strike  # type: ignore[method-assign]

    if mode == "manual":
        victim.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await rt.commands.run("/compact")
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
        victim.clear()
    else:
        rt.compaction.config = replace(config.compaction, auto=True, threshold=0.0001)
        if mode == "overflow":
            rt.compaction.config = replace(config.compaction, auto=False)
        driver.send(THIRD)
    await asyncio.wait_for(driver.when_idle(), 20)
    if fault == "kill":
        print(f"the kill point {point} never came", file=sys.stderr)
        return 3
    problems = []
    end_failed = fault == "raise" and point == "closed"
    if log.tail.open_compact is not None and not end_failed:
        problems.append(f"the bracket at seq {log.tail.open_compact['seq']} is still open")
    await rt.aclose()
    if problems:
        print("; ".join(problems), file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    args = sys.argv[1:7]
    sys.exit(asyncio.run(main(Path(args[0]), Path(args[1]), *args[2:6])))
