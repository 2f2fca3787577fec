"""The user's threads as a list: each one's title (its `/rename`, else its first prompt),
when a message was last written, its counts and any damage (engine.workspace.summary);
and which thread a reference names (an id, a list number, a unique prefix)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from msgspec import Struct

from engine.threads.paths import LOG_NAME, ThreadNotFoundError, has_log, thread_dir, user_dir
from engine.threads.thread import has_history


class ThreadInfo(Struct, frozen=True):
    id: str
    path: Path
    modified: datetime
    title: str
    problem: str | None = None
    """The bad line that ends what loads of the log (`session.jsonl:LINE: what`); the
    counts are then the consistent prefix's."""
    messages: int | None = None
    """User prompts and assistant replies on the current line (engine.workspace.summary);
    None for a log that cannot be read."""
    compactions: int | None = None
    """Compactions that completed."""
    last_activity: str = ""
    """`ts` of the last message or compaction ("" when none)."""
    last_message: str = ""
    """`ts` of the last prompt or reply written ("" when none): the list's order."""
    one_shot: bool = False
    """Begun by `trove -p`."""

    @property
    def changed(self) -> datetime:
        """When a message was last written (the log's mtime for a thread without one):
        opening the thread, a command or a compaction does not move it up the list."""
        if self.last_message:
            try:
                moment = datetime.fromisoformat(self.last_message)
            except ValueError:
                return self.modified
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        return self.modified


def _info(home: Path, user_id: str, child: Path) -> ThreadInfo:
    """One thread as listed: what its summary says (cached while the log is unchanged,
    engine.workspace.summary), or why it cannot be read. Nothing is changed on disk."""
    from engine.workspace.summary import summarize

    modified = datetime.fromtimestamp(_mtime(child / LOG_NAME), UTC)
    try:
        summary = summarize(home, user_id, child.name, child)
    except (OSError, ThreadNotFoundError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else None
        problem = f"{LOG_NAME}: unreadable ({why or exc})"
        return ThreadInfo(child.name, child, modified, "(unreadable)", problem=problem)
    return ThreadInfo(
        child.name,
        child,
        modified,
        summary.title,
        problem=summary.problem,
        messages=summary.messages,
        compactions=summary.compactions,
        last_activity=summary.last_activity,
        last_message=summary.last_message,
        one_shot=summary.one_shot,
    )


def list_threads(home: Path, user_id: str) -> list[ThreadInfo]:
    """The user's threads, the one with the newest message first (`ThreadInfo.changed`),
    each with its title (the last `/rename`, else its first prompt), counts and any
    damage, read through the summary cache."""
    root = user_dir(home, user_id) / "threads"
    found: list[ThreadInfo] = []
    if not root.is_dir():
        return found
    for child in root.iterdir():
        if child.is_dir() and has_log(child):
            found.append(_info(home, user_id, child))
    found.sort(key=lambda info: (info.changed, info.id), reverse=True)
    return found


def _mtime(path: Path) -> float:
    """When the log was last written (a link to nowhere: when the link was made)."""
    try:
        return path.stat().st_mtime
    except OSError:
        try:
            return path.lstat().st_mtime
        except OSError:
            return 0.0


def latest_thread(home: Path, user_id: str) -> str | None:
    """The thread with the newest message that has history (a user message or a queued
    prompt); threads without any are skipped (earlier versions left one per launch)."""
    for info in list_threads(home, user_id):
        if info.last_message or has_history(info.path / LOG_NAME):
            return info.id
    return None


class AmbiguousThreadError(ThreadNotFoundError):
    """A thread named by a prefix that more than one id starts with."""


def resolve_thread(home: Path, user_id: str, ref: str) -> str:
    """The id of the thread `ref` names: its id, its number in `list_threads` (1 is the
    newest), or a prefix of exactly one id. Raises ThreadNotFoundError (a subclass,
    AmbiguousThreadError, for a prefix of several, naming them)."""
    ref = ref.strip()
    root = user_dir(home, user_id) / "threads"
    try:
        if has_log(thread_dir(home, user_id, ref)):
            return ref
    except ThreadNotFoundError:
        pass  # not an id at all: maybe a number or a prefix
    if ref.isdigit() and not ref.startswith("0"):
        threads = list_threads(home, user_id)
        if int(ref) <= len(threads):
            return threads[int(ref) - 1].id
    try:
        names = sorted(c.name for c in root.iterdir() if c.name.startswith(ref) and has_log(c))
    except OSError:
        names = []
    if len(names) == 1 and ref:
        return names[0]
    if len(names) > 1 and ref:
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        raise AmbiguousThreadError(f"{ref!r} starts more than one thread: {shown}")
    raise ThreadNotFoundError(
        f"no thread {ref!r} for user {user_id!r} (give its id, a unique prefix of it, "
        "or its number in the thread list)"
    )
