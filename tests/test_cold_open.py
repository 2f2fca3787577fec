"""A log with no usable resume index opens in one pass (engine.log.cold) that holds a
chunk of events at a time, and comes out as a plain full decode of every line says:
the same events, line, state, facts, surface, rewind list and report of its tail.

The reference is `read_events` and a replay of what it holds (the whole read), never
the pass under test; the pass runs with small chunks and a small spill threshold so
every shape crosses chunk and spill boundaries.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine import events as ev
from engine.log import SessionLog, cold, resume
from engine.log import load as load_module
from engine.log.index import BLOCK, LogIndex
from engine.log.load import WINDOW
from engine.log.log_file import open_log
from engine.log.replay import read_events
from engine.runtime.rewind import points
from engine.surface import Surface
from engine.surface.fold import SurfaceFold
from engine.surface.kept import for_log, kept_parts
from engine.threads.thread import Thread
from tests.log_fuzz import write_mixed

SMALL_CHUNK = 700
"""Bytes per chunk in these tests: a few lines each, so lines and folds straddle chunks."""


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cold, "CHUNK", SMALL_CHUNK)


def _small_fold() -> SurfaceFold:
    return SurfaceFold(spill_at=6, keep=2)


# -- helpers -------------------------------------------------------------------------------


def _tracked(path: Path) -> tuple[SessionLog, Surface]:
    log = SessionLog.open(path, fold=_small_fold)
    surface = for_log(log)
    log.projections.append(surface.apply)
    log.on_rewind.append(lambda: surface.follow(log.line_change, log.events))
    return log, surface


@contextlib.contextmanager
def _without_index(path: Path) -> Iterator[None]:
    index = resume.path_for(path)
    aside = index.with_name("aside")
    moved = index.exists()
    if moved:
        os.rename(index, aside)
    try:
        yield
    finally:
        if moved:
            os.rename(aside, index)


def _plain(path: Path, monkeypatch: pytest.MonkeyPatch) -> SessionLog:
    """The log as a plain full decode reads it: every line decoded and held, then replayed
    (the one-pass open switched off; read-only, no index)."""
    with monkeypatch.context() as patch:
        patch.setattr(load_module, "_cold", lambda path, fold: None)
        with _without_index(path):
            log = SessionLog.open(path, read_only="the reference")
    assert log.file_events.held_from == 0
    return log


def _cold(path: Path, *, read_only: bool = True) -> SessionLog:
    """The log opened in one pass (any index set aside first)."""
    resume.discard(path)
    return SessionLog.open(path, read_only="cold" if read_only else None, fold=_small_fold)


def _same(mine: SessionLog, whole: SessionLog) -> None:
    assert mine.file_events.held_from > 0 or len(mine.file_events) <= WINDOW
    assert len(mine.file_events) == len(whole.file_events)
    assert list(mine.file_events) == list(whole.file_events)
    assert list(mine.events) == list(whole.events)
    assert mine.state == whole.state
    assert mine.facts == whole.facts
    assert mine.tail == whole.tail
    surface = for_log(mine)
    theirs = Surface.from_events(whole.events)
    assert surface.deferred or not theirs.entries
    assert surface.tokens == theirs.tokens
    assert surface.newest == theirs.newest
    assert surface.version == theirs.version
    assert surface.reshapes == theirs.reshapes
    assert surface._turn == theirs._turn
    assert surface._replacements == theirs._replacements
    assert surface.entries == theirs.entries
    assert surface.messages() == theirs.messages()
    assert points(mine) == points(whole)


def _write(path: Path, seed: int, turns: int) -> None:
    log, surface = _tracked(path)
    write_mixed(log, surface, random.Random(seed), turns)
    log.close()
    resume.discard(path)


def _chat(log: SessionLog, turns: int, *, tools: bool = False, thinking: bool = False) -> None:
    first = log.tail.last_turn + 1
    for turn in range(first, first + turns):
        item = log.append(ev.InboxQueued(text=f"prompt {turn}", waking=True)).seq
        log.append(ev.TurnStart(turn=turn, items=(item,)))
        log.append(ev.UserMessage(text=f"prompt {turn} " + "x" * 40, item_id=item))
        if tools:
            call = ev.ToolCall(f"c{turn}", "echo", "{}")
            log.append(ev.AssistantMessage(content="", tool_calls=(call,)))
            log.append(ev.ToolResult(call_id=call.id, name="echo", content="r" * 30))
        reasoning = f"thinking {turn}" if thinking else None
        log.append(
            ev.AssistantMessage(
                content=f"reply {turn} " + "y" * 60, tool_calls=(), reasoning=reasoning
            )
        )
        log.append(ev.TurnEnd(turn=turn, status="ok"))


# -- every shape, against a plain full decode ----------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_one_pass_reads_a_mixed_log_as_a_full_decode(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compactions, rewinds (to branches too), withdrawn prompts, tool rounds, forks, open
    and stale brackets, drafts, notes, unknown kinds."""
    path = tmp_path / "session.jsonl"
    _write(path, seed, 120)
    _same(_cold(path), _plain(path, monkeypatch))


def test_a_long_thread_never_compacted_spills_its_surface(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    _chat(log, 400, tools=True, thinking=True)
    log.append(ev.SessionTitle(title="first"))
    _chat(log, 5)
    log.append(ev.SessionTitle(title="  second   name "))
    log.close()
    _same(_cold(path), _plain(path, monkeypatch))


def test_a_compaction_reaching_spilled_rows_and_a_withdrawal_reaching_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 60, tools=True)
    entries = surface.entries
    run = entries[3:40]
    replaced = [e.seq for e in run]
    start = log.append(ev.CompactStart(turn=None)).seq
    summary = log.append(
        ev.CompactSummary(
            start=start,
            summary="s",
            span=ev.SeqSpan(first=replaced[0], last=replaced[-1], count=len(replaced)),
            replaced=replaced,
            tokens=sum(e.tokens for e in run),
        )
    ).seq
    mark = ev.Checkpoint(
        summary=summary, start=start, first=replaced[0], last=replaced[-1], count=len(replaced)
    )
    log.append(ev.UserMessage(text="the summary", checkpoint=mark))
    log.append(ev.CompactEnd(start=start, turn=None))
    # A failed turn withdraws prompts older than many checkpoints' worth of rows.
    log.append(ev.TurnStart(turn=500, items=()))
    prompts = [log.append(ev.UserMessage(text=f"p{n}")).seq for n in range(12)]
    log.append(ev.TurnEnd(turn=500, status="error", withdrawn=tuple(prompts)))
    _chat(log, 3)
    log.close()
    monkeypatch.setattr("tests.test_cold_open._small_fold", lambda: SurfaceFold(spill_at=4, keep=1))
    _same(_cold(path), _plain(path, monkeypatch))


@pytest.mark.parametrize("shape", ["torn", "corrupt", "hole", "blank tail", "unknown"])
def test_the_tail_of_a_damaged_log_reads_as_a_full_decode_says(
    tmp_path: Path, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    _write(path, 3, 60)
    data = path.read_bytes()
    if shape == "torn":
        path.write_bytes(data + b'{"seq": 99999, "ts": "x", "kind": "user/mes')
    elif shape == "corrupt":
        middle = data.index(b'"kind"', len(data) // 2)
        path.write_bytes(data[:middle] + b"#" + data[middle + 1 :])
    elif shape == "hole":
        with path.open("r+b") as fh:
            fh.seek(len(data) - 10)
            fh.truncate()
            fh.truncate(len(data) + (8 << 20))
    elif shape == "blank tail":
        path.write_bytes(data + b"  \t ")
    else:
        count = data.count(b"\n")
        line = f'{{"seq":{count + 1},"ts":"t","kind":"later/kind","x":[1,2]}}\n'.encode()
        path.write_bytes(data + line)
    whole = _plain(path, monkeypatch)
    mine = _cold(path)
    assert mine.damage_report == whole.damage_report
    loaded = load_module.load(path, _small_fold)
    reference = read_events(path)
    assert loaded.torn == reference.torn
    assert str(loaded.damage) == str(reference.damage)
    assert loaded.good_bytes == reference.good_bytes
    _same(mine, whole)


@pytest.mark.parametrize("shape", ["torn", "corrupt"])
def test_the_writer_repairs_a_cold_log_and_indexes_what_stays(
    tmp_path: Path, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    _write(path, 5, 80)
    data = path.read_bytes()
    if shape == "torn":
        path.write_bytes(data + b'{"seq": 1')
    else:
        middle = data.index(b'"kind"', len(data) // 2)
        path.write_bytes(data[:middle] + b"#" + data[middle + 1 :])
    log = _cold(path, read_only=False)
    assert log.set_aside is not None
    count = len(log.file_events)
    log.close()
    whole = _plain(path, monkeypatch)
    assert len(whole.file_events) == count
    again = SessionLog.open(path, read_only="again")
    assert again.kept_events == count  # the index the repair's open wrote
    _same(again, whole)


# -- the index it writes, and what comes after --------------------------------------------


def test_the_writer_writes_the_index_so_the_next_open_reads_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    _write(path, 7, 150)
    log = _cold(path, read_only=False)
    assert resume.path_for(path).is_file()
    surface = for_log(log)
    log.projections.append(surface.apply)
    _chat(log, 2)  # appends on a cold-opened log, the surface's entries still unread
    assert log.keep_index(*kept_parts(surface, len(log.file_events)))
    log.close()
    again = SessionLog.open(path, read_only="again")
    assert again.kept_events == len(again.file_events)
    _same(again, _plain(path, monkeypatch))


def test_a_thread_resumed_cold_sends_what_a_full_replay_sends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    thread = Thread.create(home, "local", "t")
    _chat(thread.log, 300, tools=True)
    path = thread.log.path
    thread.close()
    resume.discard(path)
    resumed = Thread.resume(home, "local", "t")
    try:
        assert resumed.log.kept is not None  # the surface came from the pass
        assert resume.path_for(path).is_file()
        _same(resumed.log, _plain(path, monkeypatch))
    finally:
        resumed.close()
    viewed = Thread.view(home, "local", "t", "a view")
    assert viewed.log.kept is not None
    _same(viewed.log, _plain(path, monkeypatch))


def test_an_unwritable_index_leaves_the_cold_open_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    _write(path, 9, 120)
    monkeypatch.setattr(resume, "write_derived", lambda *a, **k: False)
    log = _cold(path, read_only=False)
    assert not resume.path_for(path).exists()
    log.close()
    _same(_cold(path), _plain(path, monkeypatch))


# -- bounded: counted, not timed -----------------------------------------------------------


def test_the_pass_holds_a_chunk_of_events_and_a_few_rows_whatever_the_length(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    _chat(log, 2000, tools=True)
    log.close()
    shortest = min(len(line) for line in path.read_bytes().splitlines())
    folds: list[SurfaceFold] = []

    def fold() -> SurfaceFold:
        folds.append(SurfaceFold(spill_at=64, keep=8))
        return folds[-1]

    chunk = 16 << 10
    with open_log(path) as fh:
        found, events = cold.read(path, fh, WINDOW, fold, chunk=chunk)
    assert found.index.count == 14_000
    assert found.most_held <= WINDOW + chunk // (shortest + 1) + 1
    assert len(events.held()) == WINDOW
    assert folds[0].most_rows <= 64
    assert folds[0].spilled + len(folds[0].rows) == 8_000  # four entries a turn
    assert found.attachment is not None and found.attachment.file() is not None
    found.attachment.close()
    if events.stored is not None:
        events.stored.close()


def test_a_rewind_folds_the_line_again_from_the_file_in_bounded_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "session.jsonl"
    log, surface = _tracked(path)
    _chat(log, 300)
    log.append(ev.SessionRewind(after=log.events[len(log.events) // 2].seq, prompt=None))
    _chat(log, 20)
    log.close()
    resume.discard(path)
    folds: list[SurfaceFold] = []

    def fold() -> SurfaceFold:
        folds.append(SurfaceFold(spill_at=32, keep=4))
        return folds[-1]

    with open_log(path) as fh:
        found, events = cold.read(path, fh, WINDOW, fold)
    assert len(folds) == 2  # the file's order given up at the rewind, the line's folded
    assert all(f.most_rows <= 32 for f in folds)
    assert found.most_held <= WINDOW + SMALL_CHUNK
    if found.attachment is not None:
        found.attachment.close()
    _same(_cold(path), _plain(path, monkeypatch))


def test_the_pass_indexes_the_log_as_a_read_of_its_bytes_does(tmp_path: Path) -> None:
    """Line offsets and block digests, across chunks, strides and blocks."""
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    _chat(log, 700, tools=True)
    log.close()
    with open_log(path) as fh:
        found, events = cold.read(path, fh, WINDOW, chunk=5000)
        reference = LogIndex()
        reference.catch_up(fh, os.fstat(fh.fileno()).st_size)
    assert found.index.parts() == reference.parts()
    assert found.index.size > 2 * BLOCK
    if events.stored is not None:
        events.stored.close()


def test_a_spill_that_cannot_be_written_leaves_the_whole_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full temporary disk: the open reads the log whole instead, the same thread."""
    path = tmp_path / "session.jsonl"
    _write(path, 11, 120)

    def full(self: SurfaceFold) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(SurfaceFold, "_spill_oldest", full)
    log = _cold(path, read_only=False)
    assert log.kept is None and log.file_events.held_from == 0
    log.close()
    monkeypatch.undo()
    _same(_cold(path), _plain(path, monkeypatch))
