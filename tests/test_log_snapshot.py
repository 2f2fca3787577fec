"""The replay snapshot (engine.log.snapshot): a long log's events decoded from msgpack on
open, but only while the log still begins with the bytes the snapshot was made from.

Every open with a snapshot is checked against a plain decode of the same file:
the snapshot may only ever save time, never change what a log holds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from engine import events as ev
from engine.log import SessionLog, read_events, snapshot
from engine.log import load as load_module
from engine.log.replay import _read_events
from tests.cli_support import REPO

COUNT = 60


@pytest.fixture(autouse=True)
def _short_logs_are_long(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots for logs of tens of events, so each test writes one in milliseconds; the
    log opened as a whole read does (an open without a resume index reads the lines in
    one pass instead, engine.log.cold, and never the snapshot: tests/test_cold_open.py)."""
    monkeypatch.setattr(snapshot, "MIN_EVENTS", 40)
    monkeypatch.setattr(snapshot, "STALE_EVENTS", 10)
    monkeypatch.setattr(load_module, "_cold", lambda path, fold: None)


def _write(path: Path, n: int, start: int = 0) -> SessionLog:
    log = SessionLog.open(path)
    for i in range(start, start + n):
        log.append(ev.TurnStart(turn=i + 1, items=[]))
        log.append(ev.UserMessage(text=f"question {i} about 上下文 and the log"))
        log.append(
            ev.AssistantMessage(content=f"answer {i}\n\n- one\n- two", tool_calls=[], model="m")
        )
        log.append(ev.TurnEnd(turn=i + 1, status="ok"))
    return log


def _plain(path: Path) -> list[ev.LogEvent]:
    """The log decoded line by line, no snapshot."""
    return _read_events(path).events


def _read_from_its_lines(path: Path) -> list[ev.LogEvent]:
    """The log read with its snapshot missed: every line decoded, as with none at all."""
    loaded = read_events(path)
    assert loaded.from_snapshot == 0
    assert loaded.events == _plain(path)
    return loaded.events


def _snapshotted(path: Path, n: int = COUNT // 4) -> SessionLog:
    log = _write(path, n)
    assert log.keep_snapshot()
    log.close()
    assert snapshot.path_for(path).exists()
    return log


def test_a_long_log_closed_by_its_writer_opens_from_its_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    _snapshotted(path)
    loaded = read_events(path)
    assert loaded.from_snapshot == COUNT
    assert loaded.events == _plain(path)
    assert loaded.good_bytes == path.stat().st_size

    log = SessionLog.open(path)
    assert log.snapshot_events == COUNT
    assert not log.keep_snapshot()  # nothing new: the snapshot it has is current
    log.close()


def test_a_short_log_keeps_no_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log = _write(path, 5)
    assert not log.keep_snapshot()
    log.close()
    assert not snapshot.path_for(path).exists()


def test_lines_after_the_snapshot_are_decoded_from_the_log(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    _snapshotted(path)
    log = _write(path, 2, start=COUNT // 4)  # 8 events: not yet worth a new snapshot
    assert not log.keep_snapshot()
    log.close()
    loaded = read_events(path)
    assert loaded.from_snapshot == COUNT
    assert len(loaded.events) == COUNT + 8
    assert loaded.events == _plain(path)

    log = _write(path, 1, start=COUNT // 4 + 2)  # 12 past the snapshot: rewritten
    assert log.keep_snapshot()
    log.close()
    assert read_events(path).from_snapshot == COUNT + 12


def test_a_torn_line_after_the_snapshot_is_cut_and_kept_as_always(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    _snapshotted(path)
    with path.open("ab") as fh:
        fh.write(b'{"seq": 61, "ts": "2025-01-01T00:00:00.000Z", "kind": "user/mess')
    loaded = read_events(path)
    assert loaded.from_snapshot == COUNT
    assert loaded.torn is not None and f"{path}:{COUNT + 1}:" in loaded.torn
    log = SessionLog.open(path)
    assert log.torn_report is not None
    assert len(log.events) == COUNT
    assert (tmp_path / f"session.jsonl.torn-{COUNT + 1}").exists()
    log.append(ev.UserMessage(text="after the crash"))
    log.close()
    assert [e.seq for e in _plain(path)] == list(range(1, COUNT + 2))


def test_a_log_changed_under_its_snapshot_is_read_from_its_lines(tmp_path: Path) -> None:
    """Repaired by hand (the same length, one word changed), or cut short: the snapshot
    no longer stands for the log and is not used."""
    path = tmp_path / "session.jsonl"
    _snapshotted(path)
    data = path.read_bytes()
    path.write_bytes(data.replace(b"question 3 ", b"QUESTION 3 ", 1))
    events = _read_from_its_lines(path)
    assert any(getattr(e, "text", "").startswith("QUESTION 3") for e in events)

    path.write_bytes(data[: data.rindex(b"\n", 0, len(data) // 2) + 1])
    _read_from_its_lines(path)


def test_a_damaged_snapshot_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    _snapshotted(path)
    kept = snapshot.path_for(path)
    whole = kept.read_bytes()
    flipped = bytearray(whole)
    flipped[len(whole) // 2] ^= 0x20  # one letter's case in the body: the body CRC differs
    for damaged in (bytes(flipped), whole[:-7], whole[:10], b"", b"garbage" * 100):
        kept.write_bytes(damaged)
        _read_from_its_lines(path)


def test_a_bad_line_after_the_snapshot_is_set_aside_and_the_snapshot_kept(
    tmp_path: Path,
) -> None:
    """The damage lies after what the snapshot covers: the quarantine cuts the log no
    shorter than that, so the snapshot still stands for the log and is used again."""
    path = tmp_path / "session.jsonl"
    _snapshotted(path)
    with path.open("ab") as fh:
        fh.write(b"not json\n")
        fh.write(b'{"seq": 62, "ts": "2025-01-01T00:00:00.000Z", "kind": "turn/end"}\n')
    loaded = read_events(path)
    assert loaded.damage is not None and loaded.damage.line == COUNT + 1
    assert len(loaded.events) == COUNT
    log = SessionLog.open(path)
    assert log.damage_report is not None and f"{path}:{COUNT + 1}: " in log.damage_report
    log.append(ev.UserMessage(text="after the repair"))
    log.close()
    again = read_events(path)
    assert again.from_snapshot == COUNT and again.damage is None
    assert again.events == _plain(path) and len(again.events) == COUNT + 1


def test_a_quarantine_that_cuts_into_the_snapshot_removes_it(tmp_path: Path) -> None:
    """Damage inside what the snapshot covers (a hand edit: the snapshot is already a
    miss): the log is cut below the snapshot's end, so the snapshot goes first, and the
    log grown back past that point is read from its lines, never from it."""
    path = tmp_path / "session.jsonl"
    _snapshotted(path)
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    lines[29] = b"{damaged by hand\n"
    path.write_bytes(b"".join(lines))
    log = SessionLog.open(path)
    assert log.damage_report is not None and f"{path}:30: " in log.damage_report
    assert not snapshot.path_for(path).exists()
    for i in range(40):
        log.append(ev.UserMessage(text=f"more {i}"))
    log.close()
    assert path.stat().st_size > len(data)
    again = read_events(path)
    assert again.damage is None and again.events == _plain(path)
    assert [e.seq for e in again.events] == list(range(1, 29 + 40 + 1))


def test_events_of_an_unknown_kind_are_kept_and_never_snapshotted(tmp_path: Path) -> None:
    """A kind a newer Trove wrote cannot be read back typed from msgpack: its log keeps
    no snapshot, and one after a snapshot is read the careful way, kept as it is."""
    path = tmp_path / "session.jsonl"
    _snapshotted(path)
    with path.open("ab") as fh:
        fh.write(b'{"seq": 61, "ts": "2025-01-01T00:00:00.000Z", "kind": "future/thing"}\n')
    log = SessionLog.open(path)
    assert type(log.events[-1]) is ev.UnknownEvent
    assert log.snapshot_events == 0
    for i in range(12):
        log.append(ev.UserMessage(text=f"more {i}"))
    assert not log.keep_snapshot()
    log.close()
    assert read_events(path).from_snapshot == 0


def test_a_rewound_log_opens_on_the_same_line_from_its_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log = _write(path, COUNT // 4)
    log.append(ev.SessionRewind(after=20))
    log.append(ev.UserMessage(text="the other way"))
    line = [e.seq for e in log.events]
    assert log.keep_snapshot()
    log.close()
    again = SessionLog.open(path)
    assert again.snapshot_events == COUNT + 2
    assert [e.seq for e in again.events] == line
    again.close()


def test_a_read_only_log_writes_no_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    _write(path, COUNT // 4).close()
    view = SessionLog.open(path, read_only="another Trove writes it")
    assert not view.keep_snapshot()
    assert not snapshot.path_for(path).exists()


async def test_closing_a_long_threads_runtime_keeps_its_snapshot(tmp_path: Path, server) -> None:
    """What every front end does at quit (`Runtime.aclose`), off the loop."""
    from engine.config import parse_config
    from engine.runtime import Runtime, open_thread
    from tests.support import client_for

    home = tmp_path / "home"
    config = parse_config(
        {"model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0}},
        source="test",
        env={},
    )
    writer = open_thread(config, home, None, "t-long")
    for i in range(COUNT):
        writer.log.append(ev.UserMessage(text=f"message {i}"))
    path = writer.log.path
    runtime = Runtime.assemble(config, home, writer, model=client_for(server))
    await runtime.aclose()
    loaded = read_events(path)
    assert loaded.from_snapshot == len(loaded.events) >= COUNT


def test_a_snapshot_a_kill_left_half_written_is_overwritten_not_left(tmp_path: Path) -> None:
    """The writer's temporary copy has one name: a crash's leftover (tens of MB for a long
    thread) is taken over by the next write, and none is left beside the log."""
    path = tmp_path / "session.jsonl"
    leftover = tmp_path / ".session.jsonl.replay.tmp"
    leftover.write_bytes(b"trove replay 1\n" + b"\0" * 4096)  # a write cut short
    _snapshotted(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.jsonl", "session.jsonl.replay"]
    assert read_events(path).from_snapshot == COUNT


def _keep_crc(data: bytes, at: int, new: bytes) -> bytes:
    """`data` with `new` written over it at `at`, and as many of the letters after `new`'s
    first word changed (between "`" and "o", so the text stays plain ASCII) as make the
    CRC-32 of every stretch from `at` or before to the end what it was: what a tool that
    rewrites a file and fixes its CRC leaves, without knowing where the CRC is."""
    changed = bytearray(data)
    changed[at : at + len(new)] = new
    target = zlib.crc32(data[at:])
    carriers = [
        (i, bit)
        for i in range(at + new.index(b" ") + 1, at + len(new))
        if 0x60 <= changed[i] <= 0x6F
        for bit in (1, 2, 4, 8)
    ]
    effect = []  # what toggling each carrier bit does to the CRC (it is linear in the bits)
    base = zlib.crc32(bytes(changed[at:]))
    for i, bit in carriers:
        changed[i] ^= bit
        effect.append(zlib.crc32(bytes(changed[at:])) ^ base)
        changed[i] ^= bit
    # Gaussian elimination over GF(2): which carriers to toggle to move `base` to `target`.
    rows: list[tuple[int, int]] = []  # (effect, carrier set as a bit mask)
    for n, value in enumerate(effect):
        mask = 1 << n
        for row, row_mask in rows:
            if value ^ row < value:
                value, mask = value ^ row, mask ^ row_mask
        if value:
            rows.append((value, mask))
            rows.sort(reverse=True)
    want, mask = base ^ target, 0
    for row, row_mask in rows:
        if want ^ row < want:
            want, mask = want ^ row, mask ^ row_mask
    assert want == 0, "not enough letters to carry the CRC"
    for n, (i, bit) in enumerate(carriers):
        if mask >> n & 1:
            changed[i] ^= bit
    assert zlib.crc32(bytes(changed[at:])) == target
    return bytes(changed)


def _planted(original: bytes) -> bytes:
    """A rewrite of `original` (a message's text) to the same length: "PLANTED" and letters."""
    letters = b"abcdefghijklmno" * (len(original) // 15 + 1)
    return b"PLANTED " + letters[: len(original) - 8]


ORIGINAL = "question 3 about 上下文 and the log".encode()
"""A message's text, once in the log and once in its snapshot."""


def test_a_snapshot_rewritten_with_its_crc_kept_is_not_believed(tmp_path: Path) -> None:
    """Issue 30 point 5: the snapshot's body says what the log does not, and every CRC-32
    over it is what it was. The open reads the log: the text seen is the log's."""
    path = tmp_path / "session.jsonl"
    _snapshotted(path)
    kept = snapshot.path_for(path)
    data = kept.read_bytes()
    kept.write_bytes(_keep_crc(data, data.index(ORIGINAL), _planted(ORIGINAL)))
    events = _read_from_its_lines(path)
    assert not any("PLANTED" in str(getattr(e, "text", "")) for e in events)
    assert sum(getattr(e, "text", "") == ORIGINAL.decode() for e in events) == 1

    log = SessionLog.open(path)  # what the app and the tools replay
    assert log.snapshot_events == 0
    assert not any("PLANTED" in str(getattr(e, "text", "")) for e in log.events)
    assert log.keep_snapshot()  # the writer replaces it with a true one
    log.close()
    assert read_events(path).from_snapshot == COUNT


def test_a_log_changed_under_its_snapshot_with_its_crc_kept_is_read_from_its_lines(
    tmp_path: Path,
) -> None:
    """The log edited in place (one message rewritten to the same length) so that its
    CRC-32 is what the snapshot recorded: the snapshot no longer stands for it."""
    path = tmp_path / "session.jsonl"
    _snapshotted(path)
    data = path.read_bytes()
    path.write_bytes(_keep_crc(data, data.index(ORIGINAL), _planted(ORIGINAL)))
    events = _read_from_its_lines(path)
    assert any(str(getattr(e, "text", "")).startswith("PLANTED ") for e in events)
    assert not any(getattr(e, "text", "") == ORIGINAL.decode() for e in events)


_OPEN = """
import sys
from pathlib import Path
from engine.log import read_events
loaded = read_events(Path(sys.argv[1]))
status = Path("/proc/self/status").read_text()
peak = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
print(loaded.from_snapshot, len(loaded.events), peak // 1024)
"""
"""One open of the log in a child: (events from the snapshot, events, peak RSS in MB)."""


def _open_in_a_child(path: Path, timeout: float = 20) -> tuple[int, int, int]:
    """The open, in a child process (a hang is a timeout, a blow-up its own memory)."""
    done = subprocess.run(
        [sys.executable, "-c", _OPEN, str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    kept, events, peak = map(int, done.stdout.split())
    return kept, events, peak


@pytest.mark.parametrize("inflation", ["length field", "length field and file"])
def test_an_inflated_snapshot_is_refused_fast_and_small(tmp_path: Path, inflation: str) -> None:
    """Issue 30 point 4: the events' count in the snapshot's body made huge, and the file
    grown (sparse) to 2 GiB behind it. The open reads the log, in a bounded time (the
    child's timeout) and memory."""
    path = tmp_path / "session.jsonl"
    _snapshotted(path)
    kept = snapshot.path_for(path)
    data = kept.read_bytes()
    header = b"\xdc" + COUNT.to_bytes(2, "big")  # msgpack: an array of COUNT events
    assert data.count(header) == 1
    kept.write_bytes(data.replace(header, b"\xdc\xff\xff"))
    if inflation == "length field and file":
        os.truncate(kept, 2 << 30)
    from_snapshot, events, peak = _open_in_a_child(path)
    assert (from_snapshot, events) == (0, COUNT)
    assert peak < 200, f"peak RSS {peak} MB"
    _read_from_its_lines(path)


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "link to another's", "directory"])
def test_a_snapshot_that_is_not_a_file_of_its_own_is_never_waited_on(
    tmp_path: Path, kind: str
) -> None:
    """A FIFO in its place is not waited on (no writer will come), a link is not followed
    (to a device, to another thread's snapshot); the writer puts a true one back."""
    path = tmp_path / "session.jsonl"
    _snapshotted(path)
    kept = snapshot.path_for(path)
    kept.unlink()
    if kind == "fifo":
        os.mkfifo(kept)
    elif kind == "link to /dev/zero":
        kept.symlink_to("/dev/zero")
    elif kind == "link to another's":
        other = tmp_path / "other" / "session.jsonl"
        other.parent.mkdir()
        shutil.copyfile(path, other)
        _snapshotted(other, COUNT // 4 + 1)
        kept.symlink_to(snapshot.path_for(other))
    else:
        kept.mkdir()
    assert _open_in_a_child(path)[:2] == (0, COUNT)
    _read_from_its_lines(path)
    if kind != "directory":
        log = SessionLog.open(path)
        assert log.keep_snapshot()
        log.close()
        assert kept.is_file() and not kept.is_symlink()
        assert read_events(path).from_snapshot == COUNT


def test_a_link_in_place_of_the_writers_temporary_copy_is_never_written_through(
    tmp_path: Path,
) -> None:
    """The temporary copy has one known name: a link put there (to the log itself) is
    replaced, never opened, so the log it points to is never truncated."""
    path = tmp_path / "session.jsonl"
    log = _write(path, COUNT // 4)
    before = path.read_bytes()
    (tmp_path / ".session.jsonl.replay.tmp").symlink_to(path)
    assert log.keep_snapshot()
    log.close()
    assert path.read_bytes() == before
    assert read_events(path).from_snapshot == COUNT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.jsonl", "session.jsonl.replay"]
