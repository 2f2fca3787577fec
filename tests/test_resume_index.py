"""Issue 27 item 4: a thread opens from its end, whatever its length.

A clean exit keeps a resume index beside the log (engine.log.resume): the line's
state, where the log's lines start, the surface. The next open reads the index, the
lines after it and the newest events, nothing else; older events are read when asked
for. The index is a cache the log outranks: damaged, stale, another thread's, or
standing for bytes the log no longer begins with, it is read past (the log is read
whole, or from the index's end), and what the thread shows and sends is exactly
what a replay of every line gives.
"""

from __future__ import annotations

import builtins
import itertools
import os
import random
import shutil
import stat
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from devtools.file_damage import DAMAGES, damage_file
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import Config, parse_config
from engine.log import LogCorruptError, SessionLog, log_file, resume, snapshot
from engine.log import load as load_module
from engine.log.index import BLOCK, STRIDE
from engine.log.load import WINDOW
from engine.log.replay import read_events
from engine.runtime import Runtime
from engine.runtime.rewind import points
from engine.surface import Surface
from engine.surface.kept import for_log, kept_parts
from engine.threads.draft import current_draft
from engine.threads.thread import Thread
from tests.log_fuzz import write_mixed
from tests.support import LIMIT, chat_messages, client_for, opened

# -- helpers -------------------------------------------------------------------------------


def _tracked(path: Path) -> tuple[SessionLog, Surface]:
    """The log open for writing with the surface its driver would hold beside it."""
    log = SessionLog.open(path)
    surface = for_log(log)
    log.projections.append(surface.apply)
    log.on_rewind.append(lambda: surface.follow(log.line_change, log.events))
    return log, surface


def _keep(log: SessionLog, surface: Surface) -> None:
    """What a clean exit keeps: the resume index, with the surface in it."""
    assert log.keep_index(*kept_parts(surface, len(log.file_events)))


def _whole(path: Path) -> SessionLog:
    """The log read whole, as if no index were beside it (read-only: nothing changes)."""
    index = resume.path_for(path)
    aside = index.with_name("aside")
    moved = index.exists() or index.is_symlink()
    if moved:
        os.rename(index, aside)
    try:
        # A plain full decode: the one-pass open (engine.log.cold) switched off.
        with mock.patch.object(load_module, "_cold", lambda path, fold: None):
            return SessionLog.open(path, read_only="the reference")
    finally:
        if moved:
            os.rename(aside, index)


def _same(opened: SessionLog, whole: SessionLog, *, surface: Surface | None = None) -> None:
    """What the thread shows and sends is what a replay of every line gives."""
    assert len(opened.file_events) == len(whole.file_events)
    assert list(opened.file_events) == list(whole.file_events)
    assert list(opened.events) == list(whole.events)
    assert opened.state == whole.state
    assert opened.facts == whole.facts
    assert opened.tail == whole.tail
    mine = surface if surface is not None else for_log(opened)
    theirs = Surface.from_events(whole.events)
    assert mine.tokens == theirs.tokens
    assert mine.newest == theirs.newest
    assert mine._turn == theirs._turn
    assert mine._replacements == theirs._replacements
    assert mine.entries == theirs.entries
    assert mine.messages() == theirs.messages()
    assert points(opened) == points(whole)


def _chat(log: SessionLog, turns: int, *, first: int = 1) -> None:
    """Plain exchanges: a queued prompt, its turn, a reply."""
    for turn in range(first, first + turns):
        item = log.append(ev.InboxQueued(text=f"prompt {turn} " + "x" * 200, waking=True)).seq
        log.append(ev.TurnStart(turn=turn, items=(item,)))
        log.append(ev.UserMessage(text=f"prompt {turn} " + "x" * 200, item_id=item))
        log.append(ev.AssistantMessage(content=f"reply {turn} " + "y" * 600, tool_calls=()))
        log.append(ev.TurnEnd(turn=turn, status="ok"))


class _Tally:
    """Bytes read from the log: every file object engine.log.log_file opens is counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bytes = 0
        tally = self

        class Counted:
            def __init__(self, fh: Any) -> None:
                self._fh = fh

            def read(self, size: int = -1) -> bytes:
                data = self._fh.read(size)
                tally.bytes += len(data)
                return bytes(data)

            def readinto(self, buffer: Any) -> int:
                n = self._fh.readinto(buffer)
                tally.bytes += n or 0
                return int(n or 0)

            def __iter__(self) -> Any:
                for line in self._fh:
                    tally.bytes += len(line)
                    yield line

            def __enter__(self) -> Counted:
                return self

            def __exit__(self, *exc: object) -> None:
                self._fh.close()

            def __getattr__(self, name: str) -> Any:
                return getattr(self._fh, name)

        def counted_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            return Counted(builtins.open(file, mode, *args, **kwargs))

        monkeypatch.setattr(log_file, "open", counted_open, raising=False)


def _config(server: ScriptedServer) -> Config:
    return parse_config(
        {"model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0}},
        source="test",
        env={},
    )


# -- the open reads the end only -------------------------------------------------------------


async def test_a_long_thread_opens_reading_only_its_end(
    tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resumed after a clean exit, a thread ten times longer reads no more of its log."""
    monkeypatch.setattr(snapshot, "MIN_EVENTS", 1 << 40)  # no replay snapshot either way
    config = _config(server)
    read: dict[int, tuple[int, int]] = {}
    for turns in (400, 4000):
        home = tmp_path / f"home-{turns}"
        thread = Thread.create(home, "local", "long")
        _chat(thread.log, turns)
        thread.close()
        first = Runtime.open(config, home, thread_id="long", model=client_for(server))
        await first.aclose()  # a clean exit: what the next open starts from
        with monkeypatch.context() as patch:
            tally = _Tally(patch)
            runtime = opened(Runtime.open(config, home, thread_id="long", model=client_for(server)))
            size = runtime.thread.log.path.stat().st_size
            read[turns] = (tally.bytes, size)
        assert len(runtime.thread.log.events) == 5 * turns + 2  # two seams
        await runtime.aclose()
    (small, _), (large, size) = read[400], read[4000]
    assert large < size / 8, read
    assert abs(large - small) <= BLOCK, read


def test_older_events_are_read_from_the_log_when_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 600)
    _keep(log, surface)
    log.close()
    tail = SessionLog.open(path)
    events = tail.file_events
    assert events.held_from == len(events) - WINDOW
    stored = tail.stored()
    assert stored is not None and stored.reads == 1  # the newest events, in one read
    expected = read_events(path).events
    assert events[0] == expected[0]
    assert events[100:110] == expected[100:110]
    assert list(itertools.islice(reversed(events), 300))[-5:] == expected[::-1][295:300]
    assert stored.reads <= 4
    tail.close()


# -- the state is a full replay's ----------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_from_its_end_a_log_reads_as_a_replay_of_every_line(tmp_path: Path, seed: int) -> None:
    """Random logs (brackets, compactions, rewinds, queued prompts, drafts, notes), closed
    cleanly at random points and killed at the end; opened from the index, written
    again by that session (its surface never read, or read by a checkpoint), killed,
    and opened again: every time, the same as a replay of every line."""
    rng = random.Random(seed)
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    write_mixed(log, surface, rng, 150, pause=lambda: _keep(log, surface))
    log.close()  # killed: what came after the last index stays after it
    for _ in range(2):
        whole = _whole(path)
        reopened, surface = _tracked(path)
        _same(reopened, whole)
        whole.close()
        write_mixed(reopened, surface, rng, 60, pause=lambda: _keep(reopened, surface))  # noqa: B023
        reopened.close()
    final = SessionLog.open(path, read_only="check")
    _same(final, _whole(path))


def test_a_surface_kept_in_the_index_is_read_when_first_used(tmp_path: Path) -> None:
    """Opened from its index, the surface has its figures at once and reads its entries
    only when used; appends before that keep it right, and a checkpoint reads them."""
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 300)
    _keep(log, surface)
    log.close()
    reopened, kept = _tracked(path)
    assert kept.deferred and kept.tokens == surface.tokens
    _chat(reopened, 2, first=301)
    assert kept.deferred  # plain appends need no entries
    start = reopened.append(ev.CompactStart(turn=None)).seq
    first, second = kept.entries[0], kept.entries[1]  # read here
    summary = reopened.append(
        ev.CompactSummary(start=start, replaced=[first.seq, second.seq], summary="s")
    ).seq
    mark = ev.Checkpoint(summary=summary, start=start, count=2)
    reopened.append(ev.UserMessage(text="summary", checkpoint=mark))
    reopened.append(ev.CompactEnd(start=start))
    _same(reopened, _whole(path), surface=kept)
    reopened.close()


# -- what the index stands for ----------------------------------------------------------------


def test_a_log_grown_after_its_index_reads_only_what_came_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 4000)
    _keep(log, surface)
    covered = path.stat().st_size
    _chat(log, 40, first=4001)  # then killed: no index for these
    log.close()
    size = path.stat().st_size
    with monkeypatch.context() as patch:
        tally = _Tally(patch)
        grown, kept = _tracked(path)
    assert grown.kept_events == 5 * 4000
    # its first and last blocks, what came after, and the newest events before that
    assert tally.bytes <= 2 * BLOCK + (size - covered) + (WINDOW + STRIDE) * 1000 < size / 4
    _same(grown, _whole(path), surface=kept)
    grown.close()


async def test_an_open_after_a_long_crashed_session_writes_the_index_again(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """Crash after crash, an open never reads more than the last session wrote."""
    from engine.runtime.assembly import REFRESH_AFTER, open_thread

    config = _config(server)
    home = tmp_path / "home"
    thread = Thread.create(home, "local", "t")
    surface = for_log(thread.log)
    thread.log.projections.append(surface.apply)
    _chat(thread.log, 100)
    _keep(thread.log, surface)
    _chat(thread.log, REFRESH_AFTER // 5 + 1, first=101)  # then killed
    thread.close()
    crashed = open_thread(config, home, "t")
    log = crashed.log
    assert log.kept_events == len(log.file_events)  # written again as it opened
    surface = for_log(log)
    assert surface.deferred
    _same(log, _whole(log.path), surface=surface)
    crashed.close()  # killed again: no index at its end
    again = SessionLog.open(log.path, read_only="check")
    assert len(again.file_events) - again.kept_events == 0
    _same(again, _whole(log.path))


def _rewrite(path: Path, at: int, data: bytes) -> None:
    with path.open("r+b") as fh:
        fh.seek(at)
        fh.write(data)


@pytest.mark.parametrize("where", ["first line", "last line", "cut", "other log"])
def test_a_log_that_is_not_what_its_index_stands_for_is_read_whole(
    tmp_path: Path, where: str
) -> None:
    """The log edited in place at its start or end, cut below the index's end, or replaced
    by another thread's log: the index is not used."""
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 400)
    _keep(log, surface)
    log.close()
    data = path.read_bytes()
    if where == "first line":
        _rewrite(path, data.index(b"prompt 1 ") + 7, b"9")
    elif where == "last line":
        _rewrite(path, data.rindex(b"reply 400 ") + 6, b"9")
    elif where == "cut":
        os.truncate(path, data.rindex(b"\n", 0, len(data) - 1) + 1)
    else:
        other = tmp_path / "other" / "session.jsonl"
        other.parent.mkdir()
        theirs = SessionLog.open(other)
        _chat(theirs, 401)
        theirs.close()
        shutil.copyfile(other, path)
    opened_log = SessionLog.open(path, read_only="check")
    assert opened_log.kept_events == 0  # read whole
    _same(opened_log, _whole(path))


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_resume_index_changes_nothing(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    write_mixed(log, surface, random.Random(7), 200)
    _keep(log, surface)
    log.close()
    other = tmp_path / "other" / "session.jsonl"
    other.parent.mkdir()
    theirs, their_surface = _tracked(other)
    write_mixed(theirs, their_surface, random.Random(8), 200)
    _keep(theirs, their_surface)
    theirs.close()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    damage_file(
        "resume",
        damage,
        resume.path_for(path),
        rng=random.Random(damage),
        other=resume.path_for(other),
        fifo=fifo,
    )
    damaged = SessionLog.open(path)
    _same(damaged, _whole(path))
    damaged.close()


def test_a_damaged_surface_in_the_index_is_replayed_instead(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 300)
    _keep(log, surface)
    log.close()
    index = resume.path_for(path)
    size = index.stat().st_size
    _rewrite(index, size - 10, b"\xff")  # in the surface's rows, past the sealed body
    reopened = SessionLog.open(path)
    assert reopened.kept_events  # the index stands: only its attachment fails
    kept = for_log(reopened)
    assert kept.deferred
    _same(reopened, _whole(path), surface=kept)
    reopened.close()


def test_a_line_damaged_inside_what_the_index_covers_is_named_when_read(tmp_path: Path) -> None:
    """Between its first and last blocks the log is not read at open: a line damaged
    there is found when something reads it, named by its line, never passed off."""
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 2000)
    _keep(log, surface)
    log.close()
    data = path.read_bytes()
    middle = data.index(b'"kind"', len(data) // 2)
    _rewrite(path, middle, b"#")
    line = data.count(b"\n", 0, middle) + 1
    reopened = SessionLog.open(path)
    assert reopened.kept_events
    with pytest.raises(LogCorruptError, match=f":{line}:"):
        list(reopened.events)
    assert reopened.damage_report is not None and f":{line}:" in reopened.damage_report
    reopened.close()
    # the index is gone: the next open reads the log whole and sets the rest aside
    assert not resume.path_for(path).exists()
    repaired = SessionLog.open(path)
    assert len(repaired.file_events) == line - 1
    assert repaired.set_aside is not None
    repaired.close()


def test_doctor_repairs_a_line_damaged_where_the_index_vouches_for_the_log(
    tmp_path: Path,
) -> None:
    from engine.workspace.doctor import examine

    home = tmp_path / "home"
    thread = Thread.create(home, "local", "t")
    surface = for_log(thread.log)
    thread.log.projections.append(surface.apply)
    _chat(thread.log, 2000)
    _keep(thread.log, surface)
    path = thread.log.path
    thread.close()
    data = path.read_bytes()
    middle = data.index(b'"kind"', len(data) // 2)
    _rewrite(path, middle, b"#")
    line = data.count(b"\n", 0, middle) + 1
    checkup = examine(home, "local", "t")
    assert checkup.status == "repaired"
    assert checkup.findings[0].line == line and checkup.findings[0].repaired
    assert len(read_events(path).events) == line - 1
    # The repair's open read the log in one pass and wrote an index of what stays.
    reopened = SessionLog.open(path, read_only="check")
    assert reopened.kept_events == line - 1
    _same(reopened, _whole(path))


def test_doctor_removes_a_resume_index_that_does_not_stand_for_the_log(tmp_path: Path) -> None:
    from engine.workspace.doctor import examine

    home = tmp_path / "home"
    thread = Thread.create(home, "local", "t")
    surface = for_log(thread.log)
    _chat(thread.log, 20)
    _keep(thread.log, surface)
    path = thread.log.path
    thread.close()
    index = resume.path_for(path)
    _rewrite(index, len(resume.MAGIC) + 2, b"\x7f")
    checkup = examine(home, "local", "t")
    (finding,) = checkup.findings
    assert finding.file == index.name and finding.repaired
    assert not index.exists()


# -- repairs after the index ---------------------------------------------------------------


def test_a_torn_line_after_the_index_is_cut_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 300)
    _keep(log, surface)
    _chat(log, 3, first=301)
    log.close()
    with path.open("ab") as fh:
        fh.write(b'{"seq":1516,"ts":"","kind":"user/mess')
    repaired, kept = _tracked(path)
    assert repaired.kept_events == 1500
    assert repaired.torn_report is not None and repaired.set_aside is not None
    assert repaired.set_aside.read_bytes().endswith(b"user/mess")
    _same(repaired, _whole(path), surface=kept)
    repaired.close()


def test_a_bad_line_after_the_index_is_quarantined_with_what_follows(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 300)
    _keep(log, surface)
    log.close()
    with path.open("ab") as fh:
        fh.write(b"not json\n")
        fh.write(b'{"seq":1502,"ts":"","kind":"user/message","text":"after"}\n')
    repaired, kept = _tracked(path)
    assert repaired.kept_events == 1500 and len(repaired.file_events) == 1500
    assert repaired.damage_report is not None and ":1501:" in repaired.damage_report
    assert repaired.set_aside is not None and b"after" in repaired.set_aside.read_bytes()
    assert resume.path_for(path).exists()  # it covers only what stays
    _same(repaired, _whole(path), surface=kept)
    repaired.close()


def test_cutting_the_log_below_the_index_removes_it(tmp_path: Path) -> None:
    from engine.log.repair import quarantine

    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 50)
    _keep(log, surface)
    log.close()
    data = path.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    from datetime import UTC, datetime

    quarantine(path, cut, datetime.now(UTC))
    assert not resume.path_for(path).exists()


def test_an_index_a_kill_left_half_written_is_not_used_and_is_overwritten(
    tmp_path: Path,
) -> None:
    """A kill while the index is written leaves its temporary copy, never the index: the
    old index (or none) stands, and the next write takes the copy's name over."""
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 300)
    _keep(log, surface)
    _chat(log, 5, first=301)
    leftover = tmp_path / ".session.jsonl.resume.tmp"
    leftover.write_bytes(resume.path_for(path).read_bytes()[:100])  # a write cut short
    log.close()  # killed before the rename
    reopened, kept = _tracked(path)
    assert reopened.kept_events == 1500  # the old index, extended by what came after
    _same(reopened, _whole(path), surface=kept)
    _keep(reopened, kept)
    reopened.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["session.jsonl", "session.jsonl.resume"]


def test_the_index_is_private_and_never_written_through_a_link(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 20)
    target = tmp_path / "elsewhere"
    target.write_bytes(b"keep me")
    resume.path_for(path).symlink_to(target)
    _keep(log, surface)
    log.close()
    assert target.read_bytes() == b"keep me"
    index = resume.path_for(path)
    assert not index.is_symlink()
    assert stat.S_IMODE(index.stat().st_mode) == 0o600


# -- the runtime ------------------------------------------------------------------------------


async def test_a_thread_resumed_from_its_index_sends_what_a_full_replay_sends(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """Queued prompts, the draft and the conversation come back from the index; the first
    request carries exactly the history a replay of every line gives."""
    config = _config(server)
    home = tmp_path / "home"
    thread = Thread.create(home, "local", "t")
    log = thread.log
    _chat(log, 300)
    log.append(ev.InboxQueued(text="left queued", waking=False))
    log.append(ev.PromptDraft(text="half typed"))
    thread.close()
    first = Runtime.open(config, home, thread_id="t", model=client_for(server))
    await first.aclose()
    whole = _whole(first.thread.log.path)
    expected = Surface.from_events(whole.events).messages()
    runtime = opened(Runtime.open(config, home, thread_id="t", model=client_for(server)))
    log = runtime.thread.log
    assert log.kept_events  # from the index
    assert [item.text for item in runtime.driver.inbox] == ["left queued"]
    assert current_draft(log) == "half typed"
    assert runtime.driver.surface.deferred
    assert [p.text for p in points(log)] == [p.text for p in points(whole)]
    runtime.driver.send("and now?")
    import asyncio

    await asyncio.wait_for(runtime.driver.when_idle(), LIMIT)
    sent = chat_messages(server.requests[0])
    # the queued prompt ran first, as its own turn, after the history as it was
    assert sent[: len(expected)] == expected
    assert sent[len(expected)]["content"] == "left queued"
    await runtime.aclose()
