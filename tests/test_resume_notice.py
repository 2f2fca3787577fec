"""Issue 25 item 7: the notice after a compaction the last lifecycle cut off says what is true.

Cut off before its checkpoint, the conversation is as it was ("nothing was lost"). Cut
off after it (a kill or a quit while the originals were being archived), the summary
has replaced the span: the notice says the conversation is compacted, and where the
originals are: archived, recovered from the log as the thread opened, not archivable
(history unavailable), or, with task continuity off, never archived.
tests/test_faults.py drives the same through a real kill at each point.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import Config, parse_config
from engine.runtime import INTERRUPTED_COMPACTION, Runtime
from engine.threads.thread import Thread
from engine.workspace.reports import cli_search
from tests.support import client_for, of_kind, opened

THREAD = "t-cut"
COMPACTED = (
    "The compaction that was running when Trove last quit had already replaced 4 messages "
    "with its summary: the conversation is compacted."
)
QUIT_WHILE_ARCHIVING = {
    "cancelled": "session closing",
    "archive_error": "the archive write was cancelled",
}
"""The close a quit writes when the cancel reached the archive write itself."""


def _config(server: ScriptedServer, *, continuity: bool = True) -> Config:
    return parse_config(
        {
            "model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0},
            "compaction": {"keep_recent_tokens": 0},
            "task_continuity": {"enabled": continuity},
        },
        source="test",
        env={},
    )


def _cut_log(home: Path, *, upto: str, end: dict[str, Any] | None = None) -> None:
    """Two exchanges and a /compact of them that stops after `upto` ("start", "summary"
    or "checkpoint"); closed by a `compact/end` of `end`'s fields if given (a quit's
    close), else left open (a kill). The next open appends the seam."""
    thread = Thread.create(home, "local", THREAD)
    log = thread.log
    seqs = []
    for word in ("one", "two"):
        seqs.append(log.append(ev.UserMessage(text=f"question {word}")).seq)
        seqs.append(log.append(ev.AssistantMessage(content=f"answer {word}")).seq)
    span = ev.SeqSpan(seqs[0], seqs[-1], len(seqs))
    start = log.append(ev.CompactStart(turn=None, range=span, tokens=40, stability="span"))
    if upto in ("summary", "checkpoint"):
        summary = log.append(
            ev.CompactSummary(start=start.seq, summary="two questions", span=span, replaced=seqs)
        )
    if upto == "checkpoint":
        mark = ev.Checkpoint(
            summary=summary.seq, start=start.seq, first=seqs[0], last=seqs[-1], count=len(seqs)
        )
        log.append(ev.UserMessage(text="[Checkpoint: two questions]", checkpoint=mark))
    if end is not None:
        log.append(ev.CompactEnd(start=start.seq, **end))
    thread.close()


def _resume(home: Path, server: ScriptedServer, **config: Any) -> Runtime:
    return opened(
        Runtime.open(_config(server, **config), home, thread_id=THREAD, model=client_for(server))
    )


def _said(runtime: Runtime) -> list[str]:
    return [notice for notice in runtime.notices if "Trove last quit" in notice]


@pytest.mark.parametrize("upto", ["start", "summary"])
async def test_cut_before_the_checkpoint_says_nothing_was_lost(
    tmp_path: Path, server: ScriptedServer, upto: str
) -> None:
    # A summary line alone replaces nothing: the checkpoint's append is the one switch.
    _cut_log(tmp_path, upto=upto)
    runtime = _resume(tmp_path, server)
    assert _said(runtime) == [INTERRUPTED_COMPACTION]
    assert not any(entry.checkpoint for entry in runtime.driver.surface.entries)
    await runtime.aclose()


@pytest.mark.parametrize("end", [None, QUIT_WHILE_ARCHIVING], ids=["killed", "quit"])
async def test_cut_after_the_checkpoint_says_compacted_and_archived_on_open(
    tmp_path: Path, server: ScriptedServer, end: dict[str, Any] | None
) -> None:
    _cut_log(tmp_path, upto="checkpoint", end=end)
    runtime = _resume(tmp_path, server)
    assert _said(runtime) == [
        f"{COMPACTED} Its originals are archived (batch 1, recovered from the log as this "
        "thread opened): history search can read them."
    ]
    # What it says is so: the checkpoint is the conversation, the originals are findable.
    assert [entry.checkpoint for entry in runtime.driver.surface.entries] == [True]
    archived = of_kind(runtime.thread.log.events, ev.CompactArchived)
    assert [(a.recovered, a.archive["batch"]) for a in archived] == [(True, 1)]
    await runtime.aclose()
    found = cli_search(tmp_path, "local", THREAD, "question")
    assert found["status"] == "available" and {r["origin"] for r in found["results"]} == {"archive"}


async def test_cut_after_the_checkpoint_with_no_archive_says_unavailable(
    tmp_path: Path, server: ScriptedServer
) -> None:
    _cut_log(tmp_path, upto="checkpoint")
    history = tmp_path / "users" / "local" / "threads" / THREAD / "task-history"
    history.write_text("a file where the archive's directory belongs")
    runtime = _resume(tmp_path, server)
    [said] = _said(runtime)
    assert said.startswith(f"{COMPACTED} Its originals could not be archived (")
    assert said.endswith(
        "): history is unavailable until they are; they are still in the log, and the next "
        "open tries again."
    )
    await runtime.aclose()
    assert cli_search(tmp_path, "local", THREAD, "question")["status"] == "unavailable"


async def test_cut_after_the_checkpoint_with_continuity_off(
    tmp_path: Path, server: ScriptedServer
) -> None:
    _cut_log(tmp_path, upto="checkpoint")
    runtime = _resume(tmp_path, server, continuity=False)
    assert _said(runtime) == [
        f"{COMPACTED} Task continuity is off, so its originals were not archived; "
        "the log keeps them."
    ]
    await runtime.aclose()


async def test_a_quit_during_the_archive_write_says_compacted_and_archived(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """A real quit: /compact has committed its checkpoint and is archiving when the
    runtime closes. The archive write runs to its end through the cancel (the originals
    have left the surface), the close says so, and the next open says it too."""
    runtime = opened(Runtime.open(_config(server), tmp_path, model=client_for(server)))
    for prompt in ("question one", "question two"):
        runtime.driver.send(prompt)
        await asyncio.wait_for(runtime.driver.when_idle(), 5)
    store = runtime.continuity.store if runtime.continuity is not None else None
    assert store is not None
    archiving, go_on = threading.Event(), threading.Event()
    capture = store.capture

    def held_capture(key: int, records: Any) -> Any:  # in a worker thread
        archiving.set()
        go_on.wait(10)
        return capture(key, records)

    store.capture = held_capture  # type: ignore[method-assign,assignment]
    server.script(s.text("two questions"))
    compact = asyncio.ensure_future(runtime.commands.run("/compact"))
    try:
        await asyncio.to_thread(archiving.wait, 10)
        closing = asyncio.ensure_future(runtime.aclose())
        for _ in range(100):  # until the close has cancelled /compact (a state, not a time)
            if compact.cancelling():
                break
            await asyncio.sleep(0)
        assert compact.cancelling()
    finally:
        go_on.set()
    await asyncio.wait_for(closing, 10)
    done = compact.result()  # the cancel came after the checkpoint: /compact says so
    assert done.ok and done.text.endswith("(The cancel came too late to stop it.)")
    thread_id = runtime.thread.id
    resumed = opened(
        Runtime.open(_config(server), tmp_path, thread_id=thread_id, model=client_for(server))
    )
    [end] = of_kind(resumed.thread.log.events, ev.CompactEnd)
    assert end.cancelled == "session closing" and end.archive["batch"] == 1
    assert [n for n in resumed.notices if "Trove last quit" in n] == [
        f"{COMPACTED} Its originals are archived (batch 1): history search can read them."
    ]
    await resumed.aclose()
