"""Competing writers making the archive file: each race forced by a seam, never by timing.

Two stores of one thread both capture before either has a file: the loser of
the race must open the winner's file (never fail with "File exists", nor take
the file that appeared between two looks for a link to nothing), and nobody,
writer or reader, may find a half-made file under the archive's name. What
is not an archive there (a FIFO, a device, a link) is still refused, also
when it is put there while the file is being made.

The seams: `appears_after` makes a competing store's capture happen the
moment a look (`os.stat` or `os.lstat`) found no file, before the look
answers; `during_creation` runs something when the creating connection
starts its first write transaction (a trace callback, as SQLite runs it).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.config import TaskContinuityConfig
from engine.continuity import ArchiveStore, ArchiveUnavailableError, CaptureError, Source, source_id
from engine.continuity.archive import terms as archive_terms
from engine.continuity.archive.store import APPLICATION_ID, SCHEMA_VERSION

SCOPE = "user/thread"


def rec(seq: int, text: str) -> Source:
    return Source(source_id("user", seq, text), "user", seq, text)


def store(path: Path) -> ArchiveStore:
    return ArchiveStore(path, TaskContinuityConfig(max_batches=1), scope=SCOPE)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "thread" / "task-history" / "history.sqlite"


def _names(path: Path, p: object) -> bool:
    return isinstance(p, str | os.PathLike) and os.fspath(p) == os.fspath(path)


def appears_after(
    monkeypatch: pytest.MonkeyPatch, path: Path, probe: str, make: Callable[[], None]
) -> list[str]:
    """The first time `os.<probe>` finds nothing at `path`, `make` runs before that answer
    is given: the file appears right after a look found it missing. Returns what fired."""
    real = getattr(os, probe)
    fired: list[str] = []

    def look(p: object, *args: object, **kw: object) -> os.stat_result:
        try:
            return real(p, *args, **kw)
        except FileNotFoundError:
            if not fired and _names(path, p):
                fired.append(probe)
                make()
            raise

    monkeypatch.setattr(os, probe, look)
    return fired


def during_creation(monkeypatch: pytest.MonkeyPatch, make: Callable[[], None]) -> list[str]:
    """`make` runs as the next connection opened starts its first `BEGIN IMMEDIATE`
    (before it takes the lock); returns the statement it ran at."""
    real = sqlite3.connect
    fired: list[str] = []

    def connect(*args: object, **kw: object) -> sqlite3.Connection:
        conn = real(*args, **kw)  # type: ignore[arg-type]
        if not fired:

            def trace(sql: str) -> None:
                if not fired and sql.startswith("BEGIN IMMEDIATE"):
                    fired.append(sql)  # the callback stays set (unset from inside it, it crashes)
                    make()

            conn.set_trace_callback(trace)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    return fired


def what_is_there(path: Path) -> str:
    """`absent`, `whole` (a Trove archive of the current schema) or `half made`."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return "absent"
    if not stat.S_ISREG(info.st_mode):
        return "half made"
    with path.open("rb") as fh:
        header = fh.read(100)
    if len(header) < 100:
        return "half made"
    (version,) = struct.unpack_from(">I", header, 60)
    (app,) = struct.unpack_from(">I", header, 68)
    return "whole" if (app, version) == (APPLICATION_ID, SCHEMA_VERSION) else "half made"


def leftovers(path: Path) -> list[str]:
    """Temporary copies left in the archive's folder."""
    if not path.parent.is_dir():
        return []
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith("."))


def _check_retention(path: Path, first: int, second: int) -> None:
    """Both captures made a batch; `max_batches=1` kept only the later one, and the
    accelerator file speaks for it."""
    assert first != second
    with store(path) as reader:
        [kept] = reader.batches()
    assert kept.id == max(first, second)
    terms = archive_terms.load(path, SCOPE)
    assert terms is not None and kept.id in terms.present


@pytest.mark.parametrize("probe", ["stat", "lstat"])
def test_a_capture_opens_the_archive_a_competing_writer_made_after_it_looked(
    path: Path, monkeypatch: pytest.MonkeyPatch, probe: str
) -> None:
    """`stat`: the file appears between the two looks of the existence check, and was taken
    for a link to nothing. `lstat`: it appears after both, before the exclusive create,
    which failed with "File exists". The loser opens the winner's file either way."""
    late, first = store(path), store(path)
    made: dict[str, int] = {}
    fired = appears_after(
        monkeypatch,
        path,
        probe,
        lambda: made.update(first=first.capture(1, [rec(1, "first words")]).batch_id),
    )
    result = late.capture(2, [rec(2, "late words")])
    assert fired == [probe]
    assert made["first"] < result.batch_id
    monkeypatch.undo()
    _check_retention(path, made["first"], result.batch_id)
    assert leftovers(path) == []
    first.close()
    late.close()


def test_an_archive_is_whole_when_it_appears_under_its_name(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the first writer gives its new file the schema, the archive's name holds no
    file, not an empty one: a competing writer then makes its own, and the first opens
    that one instead of its own."""
    creator, rival = store(path), store(path)
    seen: list[str] = []
    made: dict[str, object] = {}

    def meanwhile() -> None:
        seen.append(what_is_there(path))
        try:
            made["rival"] = rival.capture(1, [rec(1, "rival words")]).batch_id
        except Exception as exc:  # reported by the assertion below
            made["rival"] = exc
        seen.append(what_is_there(path))

    fired = during_creation(monkeypatch, meanwhile)
    result = creator.capture(2, [rec(2, "creator words")])
    assert fired
    assert seen == ["absent", "whole"]
    assert isinstance(made["rival"], int), made
    monkeypatch.undo()
    _check_retention(path, made["rival"], result.batch_id)
    assert leftovers(path) == []
    creator.close()
    rival.close()


def test_without_hard_links_competing_writers_still_share_one_file(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system without hard links: the file is made in place (O_EXCL) and its
    schema given by the capture's serialized steps; the loser opens it all the same."""

    def no_link(*args: object, **kw: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    late, first = store(path), store(path)
    made: dict[str, int] = {}
    fired = appears_after(
        monkeypatch,
        path,
        "lstat",
        lambda: made.update(first=first.capture(1, [rec(1, "first words")]).batch_id),
    )
    result = late.capture(2, [rec(2, "late words")])
    assert fired == ["lstat"]
    monkeypatch.undo()
    _check_retention(path, made["first"], result.batch_id)
    assert leftovers(path) == []
    first.close()
    late.close()


def _hostile(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fifo = path.parent.parent / "fifo"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link to a FIFO":
        os.mkfifo(fifo)
        path.symlink_to(fifo)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "link to nothing":
        path.symlink_to(path.parent / "nothing")
    elif kind == "link to itself":
        path.symlink_to(path)
    elif kind == "directory":
        path.mkdir()


HOSTILE = [
    "fifo",
    "link to a FIFO",
    "link to /dev/zero",
    "link to nothing",
    "link to itself",
    "directory",
]


@pytest.mark.parametrize("kind", HOSTILE)
def test_what_is_not_an_archive_under_its_name_is_refused_and_left_alone(
    path: Path, kind: str
) -> None:
    _hostile(path, kind)
    before = os.lstat(path)
    with store(path) as writer:
        with pytest.raises(CaptureError):
            writer.capture(1, [rec(1, "words")])
        with pytest.raises(ArchiveUnavailableError):
            writer.batches()
    reader = ArchiveStore(path, TaskContinuityConfig(), readonly=True)
    with reader, pytest.raises(ArchiveUnavailableError):
        reader.batches()
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert leftovers(path) == []


@pytest.mark.parametrize("kind", ["link to a FIFO", "fifo", "link to nothing"])
def test_what_is_put_under_its_name_while_the_archive_is_made_is_refused(
    path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The new file is never linked over it nor opened through it: the capture fails
    (history unavailable), without waiting on a FIFO, and leaves no temporary copy."""
    writer = store(path)
    fired = during_creation(monkeypatch, lambda: _hostile(path, kind))
    with pytest.raises(CaptureError):
        writer.capture(1, [rec(1, "words")])
    assert fired
    assert not stat.S_ISREG(os.lstat(path).st_mode)
    assert leftovers(path) == []
    writer.close()
