"""The log's control events stand in for every event wherever resume reads them.

The inbox restore decides what runs next and the history scan decides what
is recovered, so each must come out the same from `SessionLog.control` as
from a walk of every event, live (appended) and after a reopen.
"""

from __future__ import annotations

import random
from pathlib import Path

import msgspec

from engine import events as ev
from engine.continuity.archive.status import archive_failure, scan_history, scope_binding
from engine.driver import Driver
from engine.log import SessionLog, TailState
from engine.log.control import is_control

SCOPE = scope_binding("local", "t")


def _write_mixed(log: SessionLog, rng: random.Random, turns: int) -> None:
    """Queued prompts edited, withdrawn and delivered, compactions, forks and seams."""
    queued: list[int] = []
    for turn in range(1, turns + 1):
        for _ in range(rng.randint(0, 2)):
            queued.append(log.append(ev.InboxQueued(text=f"q{turn}")).seq)
        if queued and rng.random() < 0.3:
            log.append(ev.InboxEdited(item_id=rng.choice(queued), text=f"edited {turn}"))
        if queued and rng.random() < 0.2:
            log.append(ev.InboxRemoved(item_id=queued.pop(rng.randrange(len(queued)))))
        log.append(ev.TurnStart(turn=turn, items=[]))
        item = queued.pop(0) if queued and rng.random() < 0.7 else None
        log.append(ev.UserMessage(text=f"u{turn}", item_id=item))
        if rng.random() < 0.2:
            log.append(ev.UserMessage(text="context", source="inject"))
        log.append(ev.AssistantMessage(content=f"a{turn}", tool_calls=[]))
        if rng.random() < 0.1:
            start = log.append(ev.CompactStart(turn=turn)).seq
            log.append(ev.UserMessage(text="summary", checkpoint=ev.Checkpoint(start=start)))
            ref = {"scope": SCOPE, "batch": turn, "records": 2, "omitted_records": 0}
            archive = rng.choice([ref, archive_failure(SCOPE, "disk"), msgspec.UNSET, None])
            if archive is not None:  # None: a crash before the bracket closed
                log.append(ev.CompactEnd(start=start, turn=turn, archive=archive))
            if rng.random() < 0.3:
                log.append(ev.CompactArchived(start=start, archive=ref))
        if rng.random() < 0.9:  # some turns stay open: a crash
            log.append(ev.TurnEnd(turn=turn, status="ok"))
        if rng.random() < 0.05:
            log.append(ev.EndSeed(previous=None))
        if rng.random() < 0.03:
            log.append(ev.SessionFork(from_thread="other", from_seq=1))


def _reference_inbox(events: list[ev.LogEvent]) -> list[tuple[int, str]]:
    """The restore as a walk of every event (what the driver did before control events)."""
    pending: dict[int, str] = {}
    for event in events:
        if isinstance(event, ev.InboxQueued):
            pending[event.seq] = event.text
        elif isinstance(event, ev.InboxEdited) and event.item_id in pending:
            pending[event.item_id] = event.text
        elif isinstance(event, ev.InboxRemoved | ev.UserMessage) and event.item_id is not None:
            pending.pop(event.item_id, None)
    return list(pending.items())


class _NoModel:
    """The driver is only built here: no turn ever starts, so no model is called."""


def _restored(log: SessionLog) -> list[tuple[int, str]]:
    driver = Driver(log, _NoModel())  # type: ignore[arg-type]
    return [(int(item.id), item.text) for item in driver.inbox]


def test_control_events_are_kept_in_order_live_and_after_reopen(tmp_path: Path) -> None:
    for seed in range(8):
        path = tmp_path / f"{seed}.jsonl"
        log = SessionLog.open(path)
        _write_mixed(log, random.Random(seed), 60)
        expected = [e for e in log.events if is_control(e)]
        assert log.control == expected
        log.close()
        reopened = SessionLog.open(path)
        assert reopened.control == expected
        # one pass gives the same brackets as the walk of every event
        tail = TailState()
        tail.replay(reopened.events)
        assert reopened.tail == tail
        reopened.close()


async def test_inbox_restore_and_history_scan_match_a_walk_of_every_event(
    tmp_path: Path,
) -> None:
    for seed in range(8):
        path = tmp_path / f"{seed}.jsonl"
        log = SessionLog.open(path)
        _write_mixed(log, random.Random(seed), 60)
        live = _restored(log)
        assert live == _reference_inbox(log.events)
        assert scan_history(log.control, SCOPE) == scan_history(log.events, SCOPE)
        log.close()
        reopened = SessionLog.open(path)
        restored = _restored(reopened)
        # nothing queued is lost or reordered, and the restore is done when the
        # driver exists: before any turn could start
        assert restored == _reference_inbox(reopened.events) == live
        assert scan_history(reopened.control, SCOPE) == scan_history(reopened.events, SCOPE)
        reopened.close()
