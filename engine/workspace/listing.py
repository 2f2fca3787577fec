"""The user's threads as a list: each one's title (its first prompt), when it last
changed and, verified, its counts and any damage (engine.workspace.summary)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from msgspec import Struct

from engine.events import InboxQueued, UserMessage
from engine.log import LogCorruptError, parse_line
from engine.log.log_file import open_log
from engine.threads.paths import LOG_NAME, ThreadNotFoundError, has_log, user_dir
from engine.threads.thread import has_history
from engine.util.safe_text import safe_text


class ThreadInfo(Struct, frozen=True):
    id: str
    path: Path
    modified: datetime
    title: str
    problem: str | None = None
    """The bad line that ends what loads of the log (`session.jsonl:LINE: what`), when it
    was verified; the counts are then the consistent prefix's."""
    messages: int | None = None
    """User prompts and assistant replies, when verified (engine.workspace.summary)."""
    compactions: int | None = None
    """Compactions that completed, when verified."""
    last_activity: str = ""
    """`ts` of the last message or compaction, when verified ("" when none)."""


def _title(path: Path) -> str:
    """The first prompt, read from the head of the log only (cheap to list).

    Any damage in the head just ends the search: listing one thread must
    never fail the listing of the others. It is only ever shown, so it is made
    terminal-safe here, once, for every list.
    """
    try:
        with open_log(path) as fh:
            head = [line for _, line in zip(range(200), fh, strict=False)]
    except OSError:
        return "(unreadable)"
    for index, line in enumerate(head, 1):
        try:
            event = parse_line(path, index, line.rstrip(b"\n"))
        except LogCorruptError:
            break
        if isinstance(event, InboxQueued) or (
            isinstance(event, UserMessage) and event.checkpoint is None
        ):
            words = safe_text(event.text).split()
            if words:
                return " ".join(words)[:60]
    return "(empty)"


def _verified(home: Path, user_id: str, info: ThreadInfo) -> ThreadInfo:
    """The thread's counts from a full read of its log (cached while the log is unchanged),
    with the line that ends its consistent prefix when it has one (nothing is changed)."""
    from msgspec.structs import replace

    from engine.workspace.summary import summarize

    try:
        summary = summarize(home, user_id, info.id)
    except (OSError, ThreadNotFoundError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else None
        return replace(info, problem=f"{LOG_NAME}: unreadable ({why or exc})")
    return replace(
        info,
        problem=summary.problem,
        messages=summary.messages,
        compactions=summary.compactions,
        last_activity=summary.last_activity,
    )


def list_threads(home: Path, user_id: str, *, verify: bool = False) -> list[ThreadInfo]:
    """Newest first, by the time the log was last written.

    `verify` reads every log in full (through the summary cache), so a damaged
    thread is marked with its problem and the others get their counts (what
    `trove threads` shows); without it only titles are read.
    """
    root = user_dir(home, user_id) / "threads"
    found: list[ThreadInfo] = []
    if not root.is_dir():
        return found
    for child in root.iterdir():
        log_path = child / LOG_NAME
        if child.is_dir() and has_log(child):
            modified = datetime.fromtimestamp(_mtime(log_path), UTC)
            info = ThreadInfo(child.name, child, modified, _title(log_path))
            found.append(_verified(home, user_id, info) if verify else info)
    found.sort(key=lambda info: (info.modified, info.id), reverse=True)
    return found


def _mtime(path: Path) -> float:
    """When the log was last written (a link to nowhere: when the link was made)."""
    try:
        return path.stat().st_mtime
    except OSError:
        return path.lstat().st_mtime


def latest_thread(home: Path, user_id: str) -> str | None:
    """The most recently written thread that has history (a user message or a queued
    prompt); threads without any are skipped (earlier versions left one per launch)."""
    for info in list_threads(home, user_id):
        if info.title != "(empty)" or has_history(info.path / LOG_NAME):
            return info.id
    return None
