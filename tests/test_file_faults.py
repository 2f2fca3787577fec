"""Issue 30: every file beside the log is a cache the log outranks, and the log always loads.

A fault family over every file Trove keeps in a thread (the log, its lock, the
archive, the archive's terms file, the replay snapshot, the resume index, the drawn
lines, the summary cache, and the draft, a `prompt/draft` line of the log), times each
damage (deleted, cut to half, zero-filled, one seeded byte flipped, a huge
length, a link to /dev/zero, a link to a FIFO, another thread's copy), each done
while the thread is closed, and while a writer in another process has it open
(which then goes on: a prompt, /compact, a prompt left queued, a draft, the
drawn lines at quit). After each, the thread is opened as a user comes back to
it (tests/file_fault_child.py, one process for many cases) and must show:

- nothing typed lost: every prompt and draft is in the log or in what a repair
  set aside beside it (a quarantine, a torn tail), unless the damage itself
  destroyed every line that held it; what the writer left queued comes back
  queued, and its draft comes back as the draft;
- the thread loads (a notice may say what was repaired), as a writer, and
  still works (a prompt, /compact), and then reopens clean;
- the archive's status is truthful: a compacted fact not found reads
  `unavailable`, `partially_expired` or `scope_unavailable`;
- no traceback in any process, no open or reader over 2 s, no case over
  200 MB of peak RSS.

The fixture thread is built once and copied per case.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devtools import scripted_server as s
from devtools.file_damage import DAMAGES, NAMES, damage_file
from engine.compaction.prompt import SUMMARY_INSTRUCTIONS
from tests import file_fault_child as child
from tests.cli_support import REPO, _clean_env

FILES = ("log", "lock", "archive", "terms", "snapshot", "resume", "drawn", "summary", "draft")
STATES = ("closed", "open")
OPEN_LIMIT = 2.0
PEAK_KIB = 200 * 1024
REPORTED = ("unavailable", "partially_expired", "scope_unavailable")
SET_ASIDE = (".quarantine-", ".torn-")


@dataclass(frozen=True)
class Case:
    file: str
    damage: str
    state: str
    index: int

    @property
    def name(self) -> str:
        return f"{self.state}-{self.file}-{self.damage}"

    @property
    def tag(self) -> str:
        """Names this case's facts (`FACT-K012`): no other case's text holds it."""
        return f"K{self.index:03d}"


def _family(state: str) -> list[Case]:
    pairs = [
        (file, damage)
        for file in FILES
        for damage in DAMAGES
        if not (file == "draft" and damage.startswith("link"))  # a line is not a file
    ]
    return [Case(file, damage, state, i) for i, (file, damage) in enumerate(pairs)]


def _reply(body: dict[str, Any]) -> s.Reply:
    """Answers that repeat no fact, and summaries that name none (so a compacted fact is
    found only in the archive)."""
    first = (body.get("messages") or [{}])[0]
    if first.get("role") == "system" and first.get("content") == SUMMARY_INSTRUCTIONS:
        return s.text("A summary that names no codes.")
    return s.text("Noted.")


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """The model, a config for it, and the fixture threads built once: (root, config)."""
    root = tmp_path_factory.mktemp("file-faults")
    with s.ScriptedServer(fallback=_reply) as server:
        config = root / "config.yaml"
        config.write_text(
            f"model:\n  base_url: {server.base_url}\n  api_key: k\n  name: scripted-model\n"
            "  max_retries: 0\n  timeout: 10\n"
            "compaction:\n  auto: false\n  keep_recent_tokens: 0\n"
        )
        built = _run("build", config, root)
        assert built.returncode == 0, built.stderr
        _no_traceback(built.stderr)
        yield root, config


def _run(mode: str, config: Path, where: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tests.file_fault_child", mode, str(config), str(where)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_clean_env(),
        timeout=timeout,
    )


def _no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr[-4000:]


def _thread(home: Path, thread: str = child.THREAD) -> Path:
    return home / "users" / child.USER / "threads" / thread


# -- damage ------------------------------------------------------------------------------------


def _typed_lines(log: bytes) -> dict[str, list[tuple[int, int]]]:
    """Every typed text of the fixture -> the byte ranges of the log lines that hold it."""
    texts = [*child.TYPED, child.QUEUED, child.DRAFT]
    found: dict[str, list[tuple[int, int]]] = {text: [] for text in texts}
    offset = 0
    for line in log.splitlines(keepends=True):
        for text in texts:
            if text.encode() in line:
                found[text].append((offset, offset + len(line)))
        offset += len(line)
    return found


def _draft_line(log: bytes) -> tuple[int, int]:
    """The byte range of the log's last `prompt/draft` line (its newline excluded)."""
    at = log.rindex(b'{"kind":"prompt/draft"')
    return at, log.index(b"\n", at)


def _damage_draft(case: Case, log_path: Path, other_log: Path) -> tuple[int, int]:
    """Damage the draft's line of the log in place (the file keeps its inode); returns
    its byte range."""
    rng = random.Random(zlib.crc32(case.name.encode()))
    data = log_path.read_bytes()
    start, end = _draft_line(data)
    line = data[start:end]
    if case.damage == "deleted":
        new = b""
        end += 1
    elif case.damage == "truncated":
        new = line[: len(line) // 2]
    elif case.damage == "zeroed":
        new = b"\0" * len(line)
    elif case.damage == "flipped":
        at = rng.randrange(len(line))
        new = line[:at] + bytes([line[at] ^ (1 << rng.randrange(8))]) + line[at + 1 :]
    elif case.damage == "huge":  # a draft of 16 MiB: well formed, only long
        event = json.loads(line)
        event["text"] = "long draft " * ((16 << 20) // 11)
        new = json.dumps(event, separators=(",", ":")).encode()
    else:
        theirs = other_log.read_bytes()
        new = theirs[slice(*_draft_line(theirs))]
    with log_path.open("r+b") as fh:
        fh.seek(start)
        fh.write(new + data[end:])
        fh.truncate()
    return start, end


@dataclass(frozen=True)
class Damage:
    destroyed: frozenset[str]
    """The fixture's typed texts the damage itself destroyed (every log line that held
    them was hit): they may be gone."""
    quiet: bool
    """The log was written into in place, keeping its inode and size: only its ctime
    says so, which a file system stamping coarse times may not have moved. What its
    writer appended after it may then be found set aside instead of in the log."""


def _damage(case: Case, home: Path, template: Path) -> Damage:
    """Apply the case's damage to its thread, and say what it did."""
    directory = _thread(home)
    log_path = directory / "session.jsonl"
    before = log_path.read_bytes()
    was = os.stat(log_path)
    if case.file == "draft":
        hit: tuple[int, int] | None = _damage_draft(
            case, log_path, _thread(template, "other") / "session.jsonl"
        )
    else:
        fifo = home / "fifo"
        with contextlib.suppress(FileExistsError):
            os.mkfifo(fifo)
        hit = damage_file(
            case.file,
            case.damage,
            directory / NAMES[case.file],
            rng=random.Random(zlib.crc32(case.name.encode())),
            other=_thread(template, child.OTHER) / NAMES[case.file],
            fifo=fifo,
        )
        if case.file != "log":
            return Damage(frozenset(), quiet=False)
    lo, hi = hit if hit is not None else (0, len(before))
    destroyed = frozenset(
        text
        for text, ranges in _typed_lines(before).items()
        if ranges and all(start < hi and lo < end for start, end in ranges)
    )
    try:
        now = os.lstat(log_path)
    except FileNotFoundError:
        return Damage(destroyed, quiet=False)
    same = (now.st_ino, now.st_size) == (was.st_ino, was.st_size)
    return Damage(destroyed, quiet=same and stat.S_ISREG(now.st_mode))


# -- what is on disk afterwards ------------------------------------------------------------------


def _data(path: Path) -> bytes:
    """A regular file's bytes, its holes skipped (a sparse 4 GiB file reads as its data)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return b""
    if not stat.S_ISREG(info.st_mode):
        return b""
    out = bytearray()
    with path.open("rb") as fh:
        fd = fh.fileno()
        offset = 0
        while offset < info.st_size:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:
                    break
                raise
            end = os.lseek(fd, start, os.SEEK_HOLE)
            fh.seek(start)
            out += fh.read(min(end - start, 64 << 20))
            offset = end
    return bytes(out)


def _kept(directory: Path) -> bytes:
    """The log and everything a repair set aside beside it, as one haystack."""
    names = sorted(
        p.name
        for p in directory.iterdir()
        if p.name == "session.jsonl" or any(mark in p.name for mark in SET_ASIDE)
    )
    return b"\n".join(_data(directory / name) for name in names)


def _set_aside(directory: Path) -> bytes:
    return b"\n".join(
        _data(p) for p in directory.iterdir() if any(mark in p.name for mark in SET_ASIDE)
    )


# -- the run -------------------------------------------------------------------------------------


def _prepare(state: str, root: Path) -> tuple[list[Case], Path]:
    cases = _family(state)
    template = root / "template"
    listed = []
    for case in cases:
        home = root / state / case.name
        shutil.copytree(_thread(template), _thread(home))
        listed.append({"name": case.name, "home": str(home), "tag": case.tag})
    path = root / f"{state}.json"
    path.write_text(json.dumps(listed))
    return cases, path


def _halves(listing: Path, role: str) -> list[Path]:
    """The cases of `listing` in two lists, for two children side by side (one per core)."""
    cases = json.loads(listing.read_text())
    halves = []
    for part in range(2):
        path = listing.with_name(f"{listing.stem}-{role}-{part}.json")
        path.write_text(json.dumps(cases[part::2]))
        halves.append(path)
    return halves


def _child(mode: str, config: Path, listing: Path, *, stdin: bool = False) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.file_fault_child", mode, str(config), str(listing)],
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=_clean_env(),
    )


def _opened(config: Path, listing: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Open every case, in two children side by side."""
    children = [_child("open", config, half) for half in _halves(listing, "open")]
    results: dict[str, dict[str, Any]] = {}
    problems = []
    for proc in children:
        out, err = proc.communicate(timeout=240)
        if proc.returncode != 0 or "Traceback" in err or "most recent call first" in err:
            problems.append(f"an opener exited {proc.returncode}: {err[-6000:]}")
        for line in out.splitlines():
            item = json.loads(line)
            results[item["case"]] = item
    return results, problems


def _check(
    case: Case,
    home: Path,
    result: dict[str, Any] | None,
    damage: Damage,
    held: dict[str, Any] | None,
) -> list[str]:
    """What is wrong with one case after its damage and its reopening (nothing: [])."""
    if result is None:
        return ["no result (the opener died in an earlier case?)"]
    if "error" in result:
        return [result["error"]]
    problems = []
    if result["readers_s"] > OPEN_LIMIT or result["open_s"] > OPEN_LIMIT:
        problems.append(f"slow: readers {result['readers_s']:.2f} s, open {result['open_s']:.2f} s")
    if result["peak_kib"] > PEAK_KIB:
        problems.append(f"peak RSS {result['peak_kib'] // 1024} MB")
    if "not_opened" in result:
        if (case.state, case.file, case.damage) != ("closed", "log", "deleted"):
            problems.append(f"did not open: {result['not_opened']}")
        return problems
    if result["read_only"]:
        problems.append(f"opened read-only: {result['read_only']}")
    directory = _thread(home)
    kept = _kept(directory)
    typed = [*child.TYPED, child.QUEUED, child.DRAFT]
    if case.state == "open":
        typed += [
            child.typed_after(case.tag),
            child.queued_after(case.tag),
            child.draft_after(case.tag),
        ]
    lost = [text for text in typed if text not in damage.destroyed and text.encode() not in kept]
    if lost:
        problems.append(f"lost what was typed: {lost}")
    if case.state == "open":
        assert held is not None
        if held["errors"]:
            problems.append(f"the writer could not go on: {held['errors']}")
        aside = _set_aside(directory)
        for what, wanted, found in (
            ("queued", child.queued_after(case.tag), result["inbox"]),
            ("draft", child.draft_after(case.tag), [result["draft"]]),
        ):
            if wanted not in found and not (damage.quiet and wanted.encode() in aside):
                problems.append(f"the writer's {what} {wanted!r} did not come back: {found}")
    unreported = [
        f for f, ok in result["facts"].items() if not ok and result["status"] not in REPORTED
    ]
    if unreported:
        problems.append(f"facts not found with status {result['status']}: {unreported}")
    unreported = [
        f"{fact} ({status})"
        for fact, (found, status) in result["after"].items()
        if not found and status not in REPORTED
    ]
    if unreported:
        problems.append(f"after the next compaction, not found yet not reported: {unreported}")
    if result["turn"] != "ok" or not result["compact"]:
        problems.append(f"not working: turn {result['turn']}, /compact {result['compact']}")
    if result["reopened"]["damage"] or result["reopened"]["torn"]:
        problems.append(f"does not reopen clean: {result['reopened']}")
    return problems


def _hold_and_damage(
    config: Path, listing: Path, cases: list[Case], root: Path
) -> tuple[dict[str, Damage], dict[str, dict[str, Any]], list[str]]:
    """Writers in other processes (two, side by side) hold every case; the damage is done
    under them; then each goes on in its cases and quits."""
    holders = [_child("hold", config, half, stdin=True) for half in _halves(listing, "hold")]
    try:
        for holder in holders:
            assert holder.stdin is not None and holder.stdout is not None
            ready = holder.stdout.readline()
            if ready != "held\n":
                holder.kill()
                _, err = holder.communicate()
                pytest.fail(f"the writer did not start: {ready!r} {err[-4000:]}")
        damages = {
            case.name: _damage(case, root / "open" / case.name, root / "template") for case in cases
        }
        for holder in holders:
            assert holder.stdin is not None
            holder.stdin.write("go\n")
            holder.stdin.flush()  # both go on at once (communicate closes it)
        done = [holder.communicate(timeout=240) for holder in holders]
    except BaseException:
        for holder in holders:
            with contextlib.suppress(ProcessLookupError):
                os.kill(holder.pid, signal.SIGKILL)
        raise
    problems = []
    held: dict[str, dict[str, Any]] = {}
    for holder, (out, err) in zip(holders, done, strict=True):
        if holder.returncode != 0 or "Traceback" in err or "most recent call first" in err:
            problems.append(f"a writer exited {holder.returncode}: {err[-6000:]}")
        held.update((item["case"], item) for item in map(json.loads, out.splitlines()))
    return damages, held, problems


@pytest.mark.parametrize("state", STATES)
def test_every_damage_to_every_file_of_a_thread(family: tuple[Path, Path], state: str) -> None:
    root, config = family
    started = time.monotonic()
    cases, listing = _prepare(state, root)
    if state == "closed":
        damages = {
            case.name: _damage(case, root / state / case.name, root / "template") for case in cases
        }
        held: dict[str, dict[str, Any]] = {}
        problems: list[str] = []
    else:
        damages, held, problems = _hold_and_damage(config, listing, cases, root)
    results, opener_problems = _opened(config, listing)
    problems += opener_problems
    for case in cases:
        found = _check(
            case,
            root / state / case.name,
            results.get(case.name),
            damages[case.name],
            held.get(case.name),
        )
        problems += [f"{case.name}: {problem}" for problem in found]
    peak = max((r.get("peak_kib", 0) for r in results.values()), default=0) // 1024
    slowest = max((r.get("open_s", 0.0) for r in results.values()), default=0.0)
    print(
        f"{len(cases)} cases ({state}) in {time.monotonic() - started:.1f} s; "
        f"slowest open {slowest:.2f} s, highest peak RSS {peak} MB"
    )
    assert problems == [], "\n".join(problems)
