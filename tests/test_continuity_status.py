"""Status resolution over the log: scope, retention, failure, rewind and fork."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from engine.continuity import archive_failure, scope_binding
from engine.continuity.archive.status import STATUSES, HistoryScan, Resolution
from engine.continuity.archive.status import resolve as resolve_events
from engine.continuity.archive.status import scan_history as scan_events
from engine.events import LogEvent
from engine.log import from_dict


def typed(events: list[dict[str, Any]]) -> list[LogEvent]:
    """The lines (as JSON objects) as a replay of the log reads them."""
    return [from_dict(e, path=Path("session.jsonl"), lineno=e["seq"]) for e in events]


def resolve(
    events: list[dict[str, Any]],
    scope: str,
    stored: Mapping[int, int] | Collection[int] | None,
    store_error: str | None = None,
) -> Resolution:
    return resolve_events(typed(events), scope, stored, store_error)


def scan_history(events: list[dict[str, Any]], scope: str) -> HistoryScan:
    return scan_events(typed(events), scope)


ME = scope_binding("alice", "t1")


def end(seq: int, archive, **extra) -> dict:
    return {"seq": seq, "kind": "compact/end", "archive": archive, **extra}


def ref(batch: int, scope: str = ME, records: int = 2, omitted: int = 0) -> dict:
    return {"batch": batch, "scope": scope, "records": records, "omitted_records": omitted}


def test_scope_binding_is_a_hash_of_user_and_thread() -> None:
    expected = hashlib.sha256(b"alice\x00t1").hexdigest()[:32]
    assert expected == ME
    assert scope_binding("bob", "t1") != ME and scope_binding("alice", "t2") != ME


def test_no_reference_is_uninitialized() -> None:
    events = [{"seq": 1, "kind": "user/message", "text": "hi"}]
    assert resolve(events, ME, {}).status == "uninitialized"
    # a failed compaction (error) leaves no reference, whatever it carries
    failed = [end(2, ref(1), error="summary")]
    assert resolve(failed, ME, {1: 2}).status == "uninitialized"
    # a compaction without archive metadata (continuity off at the time)
    assert resolve([{"seq": 3, "kind": "compact/end"}], ME, {}).status == "uninitialized"


def test_available_lists_reachable_batches_newest_first() -> None:
    events = [end(5, ref(1)), end(9, ref(2, omitted=3))]
    res = resolve(events, ME, {1: 2, 2: 2})
    assert res.status == "available"
    assert res.reachable == (2, 1) and res.expired == ()
    assert res.omitted_records == 3  # the latest capture's record limit
    assert res.summary()["omitted_records"] == 3


def test_evicted_batch_is_partially_expired() -> None:
    events = [end(5, ref(1)), end(9, ref(2))]
    res = resolve(events, ME, {2: 2})
    assert res.status == "partially_expired"
    assert res.reachable == (2,) and res.expired == (1,)


def test_an_id_now_naming_another_batch_is_not_reachable() -> None:
    # same id, different record count: the archive was recreated
    res = resolve([end(5, ref(1, records=2))], ME, {1: 7})
    assert res.status == "partially_expired" and res.reachable == ()


def test_older_position_cannot_see_a_later_batch() -> None:
    events = [end(5, ref(1)), {"seq": 6, "kind": "user/message"}, end(9, ref(2))]
    stored = {1: 2, 2: 2}
    at_six = resolve(events[:2], ME, stored)
    assert at_six.status == "available" and at_six.reachable == (1,)
    assert resolve(events, ME, stored).reachable == (2, 1)


def test_foreign_user_or_thread_is_scope_unavailable() -> None:
    for scope in (scope_binding("mallory", "t1"), scope_binding("alice", "t2")):
        res = resolve([end(5, ref(1, scope=scope))], ME, {1: 2})
        assert res.status == "scope_unavailable" and res.reachable == ()


def test_malformed_metadata_is_unavailable_until_a_successful_capture() -> None:
    bad_values = [
        "not a dict",
        {"batch": "1", "scope": ME, "records": 1, "omitted_records": 0},
        {"batch": True, "scope": ME, "records": 1, "omitted_records": 0},
        {"batch": 1, "scope": "short", "records": 1, "omitted_records": 0},
        {"batch": 1, "scope": ME, "records": -1, "omitted_records": 0},
        {"batch": 1, "scope": ME},
        None,
    ]
    for bad in bad_values:
        events = [end(3, ref(1)), end(5, bad)]
        res = resolve(events, ME, {1: 2})
        assert res.status == "unavailable", bad
        assert res.reachable == (1,)  # existing valid references can still be read
        assert resolve([*events, end(8, ref(2))], ME, {1: 2, 2: 2}).status == "available"


def test_failed_capture_is_sticky_until_those_originals_are_archived() -> None:
    """Another batch's success does not bring the failed batch's originals back, so
    only archiving that same compaction again (compact/archived) clears it."""
    events = [end(3, ref(1), start=2), end(5, archive_failure(ME, "disk full"), start=4)]
    res = resolve(events, ME, {1: 2})
    assert res.status == "unavailable" and res.reachable == (1,)
    assert "disk full" in res.error
    later = [*events, {"seq": 6, "kind": "user/message"}, end(9, ref(2), start=7)]
    assert resolve(later, ME, {1: 2, 2: 2}).status == "unavailable"
    again = {"seq": 10, "kind": "compact/archived", "start": 4, "archive": ref(3)}
    assert resolve([*later, again], ME, {1: 2, 2: 2, 3: 2}).status == "available"


def test_a_checkpoint_whose_bracket_never_ended_is_unavailable_until_recaptured() -> None:
    """A crash between the checkpoint and the archive write leaves no reference at all."""
    checkpoint = {"seq": 6, "kind": "user/message", "checkpoint": {"start": 4, "summary": 5}}
    events = [end(3, ref(1), start=2), checkpoint]
    res = resolve(events, ME, {1: 2})
    assert res.status == "unavailable" and "interrupted" in res.error
    again = {"seq": 8, "kind": "compact/archived", "start": 4, "archive": ref(2)}
    assert resolve([*events, again], ME, {1: 2, 2: 2}).status == "available"


def test_unopenable_archive_is_unavailable() -> None:
    res = resolve([end(3, ref(1))], ME, None, "file is not a database")
    assert res.status == "unavailable" and res.reachable == () and "not a database" in res.error


def test_fork_clears_references_before_it() -> None:
    events = [
        end(3, ref(1)),
        end(5, archive_failure(ME, "x")),
        {"seq": 6, "kind": "session/fork", "from_thread": "t0", "from_seq": 5},
    ]
    forked = resolve(events, ME, {1: 2})
    assert forked.status == "uninitialized"
    assert "fork of thread t0" in forked.error and "--thread t0" in forked.error
    assert forked.summary()["reason"] == forked.error
    after = resolve([*events, end(9, ref(4))], ME, {4: 2})
    assert after.reachable == (4,) and after.error is None


def test_a_fork_reason_never_repeats_a_hostile_parent_name() -> None:
    events = [{"seq": 1, "kind": "session/fork", "from_thread": "t\x1b[2J; rm", "from_seq": 0}]
    reason = resolve(events, ME, {}).error
    assert reason is not None and "\x1b" not in reason and "rm" not in reason
    assert "fork of another thread" in reason


def test_scan_is_pure_and_statuses_are_the_documented_five() -> None:
    events = [end(3, ref(1))]
    assert scan_history(events, ME).refs == scan_history(events, ME).refs
    assert set(STATUSES) == {
        "uninitialized",
        "available",
        "partially_expired",
        "unavailable",
        "scope_unavailable",
    }


def test_an_id_the_archive_handed_out_again_is_not_the_batch_an_older_reference_names() -> None:
    """The archive file was deleted; the next compaction's capture made a new one, whose
    first batch took id 1 again (with as many records as the old batch 1, even). The
    older reference to batch 1 reaches nothing now: its originals are gone, and the
    status says so instead of `available`."""
    old = end(5, ref(1, records=2), start=3)
    new = end(9, ref(1, records=2), start=7)
    res = resolve_events(typed([old, new]), ME, {1: 2}, keys={1: 7})
    assert res.status == "partially_expired" and res.reachable == (1,) and res.expired == (1,)
    alone = resolve_events(typed([old]), ME, {1: 2}, keys={1: 7})
    assert alone.status == "partially_expired" and alone.reachable == ()
    assert resolve_events(typed([old]), ME, {1: 2}, keys={1: 3}).status == "available"
