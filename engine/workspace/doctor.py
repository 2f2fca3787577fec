"""`trove doctor THREAD`: what is wrong with a thread's files, and the log's repair.

A log with a bad line loads up to it, but only its writer moves the rest aside, so a
thread nobody opens again keeps being reported. The doctor takes the writer lock and
opens the log for writing, the one repair there is: the bad line and what follows go
to a quarantine file beside the log, every byte kept (read whole: a resume index is
removed first). A replay snapshot or a resume index that does not stand for the log
is removed. When another process holds the thread it only examines. Checked: the
log, the replay snapshot and the resume index; earlier repairs' files are listed,
not judged; the archive is left to `trove notes` and `history search`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engine.log import LogCorruptError, SessionLog, cold, read_events, resume, snapshot
from engine.log.log_file import open_log
from engine.surface.fold import SurfaceFold
from engine.threads.lock import ThreadLock, ThreadLockedError
from engine.threads.paths import LOG_NAME, ThreadNotFoundError, has_log, thread_dir

Status = Literal["healthy", "repaired", "damaged"]


@dataclass
class Finding:
    """One thing wrong with one file, and what the doctor did about it."""

    file: str
    """The file's name in the thread's directory."""
    problem: str
    """One line, `file:line: what` where there is a line."""
    line: int | None = None
    repaired: str | None = None
    """What was done (None: nothing could be)."""


@dataclass
class Checkup:
    """A thread's files as the doctor found (and left) them."""

    thread: str
    findings: list[Finding] = field(default_factory=list)
    held_by: str | None = None
    """Who has the thread's writer lock, when another process does (nothing repaired)."""
    kept: list[str] = field(default_factory=list)
    """Files that hold bytes set aside from the log (quarantines, torn tails), by name."""

    @property
    def status(self) -> Status:
        if not self.findings:
            return "healthy"
        if all(finding.repaired is not None for finding in self.findings):
            return "repaired"
        return "damaged"

    def as_json(self) -> dict[str, object]:
        """`trove doctor --json`: `{"thread", "status", "held_by", "problems": [{"file",
        "line", "problem", "repaired"}], "kept"}`."""
        return {
            "thread": self.thread,
            "status": self.status,
            "held_by": self.held_by,
            "problems": [
                {"file": f.file, "line": f.line, "problem": f.problem, "repaired": f.repaired}
                for f in self.findings
            ],
            "kept": self.kept,
        }


def _log_findings(log_path: Path, *, held: bool) -> list[Finding]:
    """What reading the log finds (nothing is changed). While another process `held` the
    thread, a last line without its newline is that writer's line being written."""
    loaded = _pass(log_path)
    found: list[Finding] = []
    damage = loaded.damage
    if damage is not None:
        rest = _size(log_path) - loaded.good_bytes
        count = loaded.count
        found.append(
            Finding(
                LOG_NAME,
                f"{LOG_NAME}:{damage.line}: {damage.problem} (the log loads up to it, "
                f"{count} event{'' if count == 1 else 's'}; {rest} bytes from there on do not)",
                damage.line,
            )
        )
    elif loaded.torn is not None and not held:
        line = loaded.count + 1
        size = log_path.stat().st_size - loaded.good_bytes
        found.append(Finding(LOG_NAME, f"{LOG_NAME}:{line}: a torn last line ({size} bytes)", line))
    return found


@dataclass
class _Read:
    count: int
    torn: str | None
    good_bytes: int
    damage: LogCorruptError | None


def _pass(log_path: Path) -> _Read:
    """What reading every line of the log finds, holding no more than a chunk of its events
    (engine.log.cold); what is not a regular file, as the whole read reports it."""
    try:
        with open_log(log_path) as fh:
            found, events = cold.read(log_path, fh, 0, follow=False)
        if events.stored is not None:
            events.stored.close()
        return _Read(found.index.count, found.torn, found.good_bytes, found.damage)
    except (OSError, LogCorruptError):
        loaded = read_events(log_path)
        return _Read(len(loaded.events), loaded.torn, loaded.good_bytes, loaded.damage)


def _size(path: Path) -> int:
    """The size of a regular file (0 for anything else under the name: nothing to read)."""
    info = os.lstat(path)
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


def _snapshot_finding(log_path: Path) -> Finding | None:
    """A replay snapshot that is not used: damaged, or about bytes the log does not hold."""
    kept = snapshot.path_for(log_path)
    if not kept.exists():
        return None
    try:
        with open_log(log_path) as fh:
            loaded = snapshot.load(log_path, fh)
    except OSError:
        loaded = None
    if loaded is None:
        return Finding(kept.name, f"{kept.name}: damaged, or not about this log (not used)")
    return None


def _resume_finding(log_path: Path) -> Finding | None:
    """A resume index that is not used: damaged, or about bytes the log does not hold."""
    kept = resume.path_for(log_path)
    if not os.path.lexists(kept):
        return None
    try:
        with open_log(log_path) as fh:
            loaded = resume.load(log_path, fh)
    except OSError:
        loaded = None
    if loaded is None:
        return Finding(kept.name, f"{kept.name}: damaged, or not about this log (not used)")
    loaded.attachment.close()
    return None


def _kept(directory: Path) -> list[str]:
    prefixes = (f"{LOG_NAME}.quarantine-", f"{LOG_NAME}.torn-")
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(prefixes))


def examine(home: Path, user_id: str, thread_id: str) -> Checkup:
    """Check the thread's files and, when its writer lock is free, repair them.

    Raises ThreadNotFoundError (no such thread, or a bad id) and OSError (a file
    that cannot be read or written).
    """
    directory = thread_dir(home, user_id, thread_id)
    log_path = directory / LOG_NAME
    if not has_log(directory):
        raise ThreadNotFoundError(f"no thread {thread_id!r} for user {user_id!r}")
    checkup = Checkup(thread_id)
    lock: ThreadLock | None = None
    try:
        lock = ThreadLock.acquire(directory, thread_id)
    except ThreadLockedError as exc:
        checkup.held_by = exc.holder
    try:
        # Read under the lock when it was taken: no writer can change the log meanwhile.
        log_findings = _log_findings(log_path, held=lock is None)
        if lock is not None and log_findings:
            # The damage may lie where a resume index vouches for the log (between the
            # blocks an open checks): without it, the writer's open reads every line.
            resume.discard(log_path)
            log = SessionLog.open(log_path, fold=SurfaceFold)  # the writer's open is the repair
            log.close()
            if log.set_aside is not None:
                moved = _size(log.set_aside)
                for finding in log_findings:
                    finding.repaired = f"moved {moved} bytes to {log.set_aside.name}"
        checkup.findings.extend(log_findings)
        stale = _snapshot_finding(log_path)
        if stale is not None:
            if lock is not None:
                snapshot.path_for(log_path).unlink(missing_ok=True)
                stale.repaired = "removed (derived: written again when a long thread closes)"
            checkup.findings.append(stale)
        unused = _resume_finding(log_path)
        if unused is not None:
            if lock is not None:
                resume.discard(log_path)
                unused.repaired = "removed (derived: written again when the thread closes)"
            checkup.findings.append(unused)
    finally:
        if lock is not None:
            lock.release()
    checkup.kept = _kept(directory)
    return checkup
