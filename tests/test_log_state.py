"""The line's state (engine.log.state) stands in for every event wherever resume reads it.

The inbox restore decides what runs next, the draft what the prompt holds, the
history scan what is recovered and the notebook what the model is told; each must
come out the same from `SessionLog.state` as from a walk of every event of the line,
live (appended) and after a reopen, through rewinds.
"""

from __future__ import annotations

import random
from pathlib import Path

from engine import events as ev
from engine.continuity.archive.extract import hidden_seqs
from engine.continuity.archive.status import scan_history
from engine.continuity.notes.note import notebook_at
from engine.driver import Driver
from engine.log import LineEvents, LineState, SessionLog, TailState
from engine.log.line import current_line
from engine.surface import Surface
from engine.threads.draft import current_draft
from tests.log_fuzz import SCOPE, write_mixed


def _reference_inbox(events: list[ev.LogEvent]) -> list[tuple[int, str]]:
    """The restore as a walk of every event of the line."""
    pending: dict[int, str] = {}
    for event in events:
        if isinstance(event, ev.InboxQueued):
            pending[event.seq] = event.text
        elif isinstance(event, ev.InboxEdited) and event.item_id in pending:
            pending[event.item_id] = event.text
        elif isinstance(event, ev.InboxRemoved | ev.UserMessage) and event.item_id is not None:
            pending.pop(event.item_id, None)
        elif isinstance(event, ev.InboxRestored):
            pending[event.item_id] = event.text
        elif isinstance(event, ev.SessionRewind):
            pending.clear()
    return sorted(pending.items())


def _reference_draft(events: list[ev.LogEvent]) -> str:
    drafts = [e.text for e in events if isinstance(e, ev.PromptDraft)]
    return drafts[-1] if drafts else ""


class _NoModel:
    """The driver is only built here: no turn ever starts, so no model is called."""


def _restored(log: SessionLog) -> list[tuple[int, str]]:
    driver = Driver(log, _NoModel(), surface=Surface())  # type: ignore[arg-type]
    return [(int(item.id), item.text) for item in driver.inbox]


def _check(log: SessionLog) -> None:
    line = list(log.events)
    assert _restored(log) == _reference_inbox(line)
    assert current_draft(log) == _reference_draft(line)
    assert scan_history(log.state.records, SCOPE) == scan_history(line, SCOPE)
    assert notebook_at(log.state.records) == notebook_at(line)
    assert set(log.state.hidden) == hidden_seqs(line)
    # The brackets are the file's fold: whatever line a rewind goes to, what it leaves
    # open is closed by the rewind itself, and the seam's facts are the lifecycle's.
    tail = TailState()
    tail.replay(log.file_events)
    assert log.tail == tail
    line_tail = TailState()
    line_tail.replay(line)
    assert (log.tail.open_turn, log.tail.open_compact) == (
        line_tail.open_turn,
        line_tail.open_compact,
    )
    typed = any(
        isinstance(e, ev.UserMessage | ev.InboxQueued) or (isinstance(e, ev.PromptDraft) and e.text)
        for e in log.file_events
    )
    assert log.has_history == typed


def test_the_line_is_the_path_to_the_newest_event_through_every_rewind(tmp_path: Path) -> None:
    """`LineEvents` (runs of the file, found from its rewinds alone) is `current_line` of
    every event, whichever way it is read."""
    for seed in range(10):
        path = tmp_path / f"{seed}.jsonl"
        log = SessionLog.open(path)
        surface = Surface()
        log.projections.append(surface.apply)
        log.on_rewind.append(lambda log=log, surface=surface: surface.rebuild(log.events))
        write_mixed(log, surface, random.Random(100 + seed), 120)
        everything = list(log.file_events)
        expected = current_line(everything)
        line = log.events
        assert list(line) == expected
        assert list(reversed(line)) == expected[::-1]
        assert [line[i] for i in range(len(line))] == expected
        assert line[3:40] == expected[3:40]
        on = {e.seq for e in expected}
        if isinstance(line, LineEvents):
            assert [line.contains_seq(e.seq) for e in everything] == [
                e.seq in on for e in everything
            ]
        log.close()


def test_the_line_state_matches_a_walk_of_every_event_live_and_after_reopen(
    tmp_path: Path,
) -> None:
    for seed in range(10):
        path = tmp_path / f"{seed}.jsonl"
        log = SessionLog.open(path)
        surface = Surface()
        log.projections.append(surface.apply)
        log.on_rewind.append(lambda log=log, surface=surface: surface.rebuild(log.events))
        rng = random.Random(seed)
        write_mixed(log, surface, rng, 80, pause=lambda log=log: _check(log))
        _check(log)
        log.close()
        reopened = SessionLog.open(path)
        _check(reopened)
        assert reopened.state == log.state
        assert reopened.facts == log.facts
        reopened.close()


def test_the_newest_rename_is_a_fact_of_the_file_kept_through_the_resume_index(
    tmp_path: Path,
) -> None:
    """The title bar reads it at open: never a walk back through a long thread's events."""
    from engine.surface.kept import kept_parts

    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    log.append(ev.UserMessage(text="hello"))
    log.append(ev.SessionTitle(title="first  name"))
    log.append(ev.UserMessage(text="more"))
    log.append(ev.SessionTitle(title="the\nnew name"))
    assert log.facts.title == "the new name"
    assert log.keep_index(*kept_parts(Surface.from_events(log.events), len(log.file_events)))
    log.close()
    from_index = SessionLog.open(path)
    assert from_index.index is not None and from_index.facts.title == "the new name"
    from_index.close()
    (path.parent / (path.name + ".resume")).unlink()
    read_whole = SessionLog.open(path)
    assert read_whole.facts.title == "the new name"
    read_whole.close()


def test_each_rewind_changes_the_line_by_what_it_cut_off_and_put_on(tmp_path: Path) -> None:
    """The surface and the line's folds after every rewind (to a point of the line, or
    across to another branch) are what a replay of the new line gives, whether the surface
    followed the change (engine.log.change) or was rebuilt (a compaction or a withdrawal
    among what was cut off): both happen here."""
    shifted = rewinds = 0
    for seed in range(20):
        path = tmp_path / f"{seed}.jsonl"
        log = SessionLog.open(path)
        surface = Surface()
        log.projections.append(surface.apply)

        def follow(log: SessionLog = log, surface: Surface = surface) -> None:
            nonlocal shifted, rewinds
            entries = surface._entries
            surface.follow(log.line_change, log.events)
            rewinds += 1
            shifted += surface._entries is entries
            fresh = Surface.from_events(log.events)
            assert surface.entries == fresh.entries
            assert (surface.tokens, surface.newest, surface._turn) == (
                fresh.tokens,
                fresh.newest,
                fresh._turn,
            )
            assert surface._replacements == fresh._replacements
            line = LineState(drafts=[])
            line.replay(log.events)
            state = log.state
            assert (state.records, state.hidden) == (line.records, line.hidden)
            assert (state.draft, state.drafts) == (line.draft, line.drafts)

        log.on_rewind.append(follow)
        rng = random.Random(1000 + seed)
        write_mixed(log, surface, rng, 150, pause=lambda log=log: _check(log))
        _check(log)
        log.close()
    assert shifted > 20 and rewinds - shifted > 20, (shifted, rewinds)


def test_a_rewind_keeps_the_seam_of_the_lifecycle(tmp_path: Path) -> None:
    """The newest seam is this lifecycle's even when a rewind leaves it on a branch (a
    /retry undone as the thread opens): what the open says of the last one reads it."""
    from engine.surface.kept import kept_parts

    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    log.append(ev.UserMessage(text="one"))
    first = log.append(ev.EndSeed(previous=1))
    log.append(ev.UserMessage(text="two"))
    seam = log.append(ev.EndSeed(previous=3))
    log.append(ev.SessionRewind(after=first.seq))
    assert log.tail.end_seed == seam
    assert log.keep_index(*kept_parts(Surface.from_events(log.events), len(log.file_events)))
    log.close()
    for whole in (False, True):
        if whole:
            (path.parent / (path.name + ".resume")).unlink()
        reopened = SessionLog.open(path, read_only="check")
        assert reopened.kept_events == (0 if whole else len(reopened.file_events))
        assert reopened.tail.end_seed == seam
        reopened.close()
