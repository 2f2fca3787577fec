"""Threads on disk: where they live, how they are created, listed and resumed.

A thread is a directory `users/{user}/threads/{thread}/` holding its
`session.jsonl`. Resuming appends `session/end-seed` at the seam, which is
the lifecycle evidence that makes anything left open before it stale.
"""

from __future__ import annotations

import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

from msgspec import Struct

from engine.events import (
    AssistantMessage,
    Checkpoint,
    EndSeed,
    InboxQueued,
    PromptDraft,
    SessionFork,
    ToolCall,
    ToolResult,
    UserMessage,
)
from engine.log import LogCorruptError, SessionLog, parse_line, read_events
from engine.log.line import current_line
from engine.log.log_file import open_log
from engine.private import private_dir
from engine.safe_text import safe_text
from engine.thread_lock import ThreadLock

THREAD_ID = re.compile(r"[A-Za-z0-9._-]{1,80}")
LOG_NAME = "session.jsonl"


class ThreadNotFoundError(Exception):
    """A --thread that names nothing: a usage error, not a new thread."""


def user_dir(home: Path, user_id: str) -> Path:
    return home / "users" / user_id


def thread_dir(home: Path, user_id: str, thread_id: str) -> Path:
    if not THREAD_ID.fullmatch(thread_id) or thread_id in (".", ".."):
        raise ThreadNotFoundError(f"invalid thread id {thread_id!r}")
    return user_dir(home, user_id) / "threads" / thread_id


def has_log(directory: Path) -> bool:
    """Whether the thread's directory has its log: anything under the log's name counts
    (a FIFO, a link: the readers report it, the writer's open moves it aside), so a
    thread whose log was damaged that way is still found, not taken for none."""
    return os.path.lexists(directory / LOG_NAME)


def new_thread_id(now: datetime | None = None) -> str:
    """Sortable by creation time, unique without coordination."""
    moment = now or datetime.now(UTC)
    return moment.strftime("%Y%m%d-%H%M%S-") + os.urandom(2).hex()


class ThreadInfo(Struct, frozen=True):
    id: str
    path: Path
    modified: datetime
    title: str
    problem: str | None = None
    """The bad line that ends what loads of the log (`session.jsonl:LINE: what`), when it
    was verified; the counts are then the consistent prefix's."""
    messages: int | None = None
    """User prompts and assistant replies, when verified (engine.thread_summary)."""
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

    from engine.thread_summary import summarize

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
        if info.title != "(empty)" or _has_history(info.path / LOG_NAME):
            return info.id
    return None


_PROMPT_KINDS = (b'{"kind":"user/message"', b'{"kind":"inbox/queued"')
_DRAFT_KIND = b'{"kind":"prompt/draft"'


def _has_history(path: Path) -> bool:
    """Any prompt in the log, sent or kept unsent (a draft with text), read line by line
    (a title is only the first 200 lines)."""
    try:
        with open_log(path) as fh:
            return any(
                line.startswith(_PROMPT_KINDS)
                or (line.startswith(_DRAFT_KIND) and b'"text"' in line)
                for line in fh
            )
    except OSError:
        return False


def resume_hint(thread_id: str, *, home: Path, user_id: str) -> str:
    """What the front ends print on quitting a thread with history: the way back.

    It names `--home` and `--user` when they are not what a bare `trove` would
    use, so the line, pasted as it is, opens this thread and no other.
    """
    import shlex

    from engine.config import Config, default_home

    words = ["trove"]
    if home.expanduser().resolve() != default_home().resolve():
        words += ["--home", shlex.quote(str(home))]
    if user_id != Config().user_id:
        words += ["--user", shlex.quote(user_id)]
    return "resume with: " + " ".join([*words, "--thread", thread_id])


class Thread(Struct):
    """An open thread: its identity, directory and log.

    A writable thread holds the thread's writer lock until `close()`; one
    opened with `read_only` holds nothing and its log refuses appends.
    """

    home: Path
    user_id: str
    id: str
    dir: Path
    log: SessionLog
    resumed: bool
    lock: ThreadLock | None = None

    @property
    def read_only(self) -> str | None:
        return self.log.read_only

    @classmethod
    def create(cls, home: Path, user_id: str, thread_id: str | None = None) -> Thread:
        tid = thread_id or new_thread_id()
        directory = private_dir(thread_dir(home, user_id, tid), base=home)
        lock = ThreadLock.acquire(directory, tid)
        try:
            log = SessionLog.open(directory / LOG_NAME)
        except BaseException:
            lock.release()
            raise
        return cls(home, user_id, tid, directory, log, False, lock)

    @classmethod
    def pending(cls, home: Path, user_id: str, thread_id: str | None = None) -> Thread:
        """A new thread that exists only once its first event is appended.

        Until then nothing is on disk (no directory, log or lock), so opening
        the app and quitting leaves no empty thread behind. The first append
        makes the directory and takes the writer's lock before the log file
        appears, so no other process can see the thread without the lock held.
        """
        tid = thread_id or new_thread_id()
        directory = thread_dir(home, user_id, tid)
        thread = cls(home, user_id, tid, directory, SessionLog(directory / LOG_NAME), False)
        thread.log = SessionLog.pending(directory / LOG_NAME, thread._materialize)
        return thread

    def _materialize(self) -> None:
        private_dir(self.dir, base=self.home)
        if self.lock is None:
            self.lock = ThreadLock.acquire(self.dir, self.id)

    @property
    def has_history(self) -> bool:
        """Whether the thread has anything a user said or kept unsent (what `resume with:`
        is worth)."""
        return any(
            isinstance(e, UserMessage | InboxQueued) or (type(e) is PromptDraft and e.text)
            for e in self.log.file_events
        )

    @classmethod
    def resume(cls, home: Path, user_id: str, thread_id: str) -> Thread:
        """Take the writer lock, replay the log and mark the seam with an end-seed.

        The lock comes first: the end-seed is what makes an unmatched
        compaction start stale, which is only true once no other process
        can still be running it.
        """
        directory = thread_dir(home, user_id, thread_id)
        if not has_log(directory):
            raise ThreadNotFoundError(f"no thread {thread_id!r} for user {user_id!r}")
        private_dir(directory, base=home)  # data an older version left readable
        lock = ThreadLock.acquire(directory, thread_id)
        try:
            log = SessionLog.open(directory / LOG_NAME)
            if log.events:
                log.append(EndSeed(previous=log.next_seq - 1))
        except BaseException:
            lock.release()
            raise
        return cls(home, user_id, thread_id, directory, log, True, lock)

    @classmethod
    def view(cls, home: Path, user_id: str, thread_id: str, reason: str) -> Thread:
        """Open a thread another process writes: read it, never write it."""
        directory = thread_dir(home, user_id, thread_id)
        if not has_log(directory):
            raise ThreadNotFoundError(f"no thread {thread_id!r} for user {user_id!r}")
        log = SessionLog.open(directory / LOG_NAME, read_only=reason)
        return cls(home, user_id, thread_id, directory, log, True, None)

    def close(self) -> None:
        try:
            self.log.close()
        finally:
            if self.lock is not None:
                self.lock.release()


def delete_thread(home: Path, user_id: str, thread_id: str) -> None:
    """Removes the whole directory: the log and the archive beside it."""
    directory = thread_dir(home, user_id, thread_id)
    if not directory.is_dir():
        raise ThreadNotFoundError(f"no thread {thread_id!r} for user {user_id!r}")
    shutil.rmtree(directory)


def fork_thread(
    home: Path, user_id: str, thread_id: str, *, upto: int | None = None, new_id: str | None = None
) -> str:
    """A new thread with the parent's messages and notes, but not its archive.

    The fork starts with `session/fork`; the messages are copied as the
    parent's surface (checkpoints included), and its notes as note writes.
    No archive reference is copied, so inherited citations read as
    unavailable until they are verified again in the fork.
    """
    from engine.continuity.extract import hidden_seqs
    from engine.continuity.notes import note_event, notebook_at
    from engine.surface import Surface

    source = thread_dir(home, user_id, thread_id) / LOG_NAME
    if not source.is_file():
        raise ThreadNotFoundError(f"no thread {thread_id!r} for user {user_id!r}")
    events = current_line(read_events(source).events)  # the branch the thread is on
    if upto is not None:
        events = [event for event in events if event.seq <= upto]
    hidden = hidden_seqs(events)
    fork = Thread.create(home, user_id, new_id)
    log = fork.log
    try:
        log.append(SessionFork(from_thread=thread_id, from_seq=events[-1].seq if events else 0))
        for entry in Surface.from_events(events).entries:
            message = entry.message
            if entry.role == "user":
                log.append(
                    UserMessage(
                        text=message.get("content", ""),
                        checkpoint=Checkpoint(forked_from=entry.seq) if entry.checkpoint else None,
                        source="inject" if not entry.checkpoint and entry.seq in hidden else None,
                    )
                )
            elif entry.role == "assistant":
                calls = tuple(
                    ToolCall(
                        id=call["id"],
                        name=call["function"]["name"],
                        arguments=call["function"]["arguments"],
                    )
                    for call in message.get("tool_calls", ())
                )
                log.append(AssistantMessage(content=message.get("content", ""), tool_calls=calls))
            elif entry.role == "tool":
                log.append(ToolResult(call_id=message["tool_call_id"], content=message["content"]))
        for note in notebook_at(events):
            log.append(note_event(note.key, note.content, list(note.source_ids)))
        log.flush()
    finally:
        fork.close()
    return fork.id
