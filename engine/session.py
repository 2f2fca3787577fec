"""Threads on disk: where they live, how they are created, listed and resumed.

A thread is a directory `users/{user}/threads/{thread}/` holding its
`session.jsonl`. Resuming appends `session/end-seed` at the seam, which is
the lifecycle evidence that makes anything left open before it stale.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from engine import log as k
from engine.log import SessionLog, read_events
from engine.safe_text import safe_text

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


def new_thread_id(now: datetime | None = None) -> str:
    """Sortable by creation time, unique without coordination."""
    moment = now or datetime.now(UTC)
    return moment.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


@dataclass(frozen=True)
class ThreadInfo:
    id: str
    path: Path
    modified: datetime
    title: str


def _title(path: Path) -> str:
    """The first prompt, read from the head of the log only (cheap to list).

    It is only ever shown, so it is made terminal-safe here, once, for every list.
    """
    try:
        with path.open("r", encoding="utf-8") as fh:
            for _, line in zip(range(200), fh, strict=False):
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    break
                if event.get("kind") in (k.USER_MESSAGE, k.INBOX_QUEUED) and not event.get(
                    "checkpoint"
                ):
                    text = " ".join(safe_text(str(event.get("text", ""))).split())
                    if text:
                        return text[:60]
    except OSError:
        pass
    return "(empty)"


def list_threads(home: Path, user_id: str) -> list[ThreadInfo]:
    """Newest first, by the time the log was last written."""
    root = user_dir(home, user_id) / "threads"
    found: list[ThreadInfo] = []
    if not root.is_dir():
        return found
    for child in root.iterdir():
        log_path = child / LOG_NAME
        if child.is_dir() and log_path.is_file():
            modified = datetime.fromtimestamp(log_path.stat().st_mtime, UTC)
            found.append(ThreadInfo(child.name, child, modified, _title(log_path)))
    found.sort(key=lambda info: (info.modified, info.id), reverse=True)
    return found


def latest_thread(home: Path, user_id: str) -> str | None:
    threads = list_threads(home, user_id)
    return threads[0].id if threads else None


@dataclass
class Thread:
    """An open thread: its identity, directory and log."""

    home: Path
    user_id: str
    id: str
    dir: Path
    log: SessionLog
    resumed: bool

    @classmethod
    def create(cls, home: Path, user_id: str, thread_id: str | None = None) -> Thread:
        tid = thread_id or new_thread_id()
        directory = thread_dir(home, user_id, tid)
        directory.mkdir(parents=True, exist_ok=True)
        return cls(home, user_id, tid, directory, SessionLog.open(directory / LOG_NAME), False)

    @classmethod
    def resume(cls, home: Path, user_id: str, thread_id: str) -> Thread:
        """Replay the log and mark the seam with an end-seed."""
        directory = thread_dir(home, user_id, thread_id)
        if not (directory / LOG_NAME).is_file():
            raise ThreadNotFoundError(f"no thread {thread_id!r} for user {user_id!r}")
        log = SessionLog.open(directory / LOG_NAME)
        if log.events:
            log.append(k.END_SEED, previous=len(log.events))
        return cls(home, user_id, thread_id, directory, log, True)

    def close(self) -> None:
        self.log.close()


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
    events = read_events(source).events
    if upto is not None:
        events = events[:upto]
    hidden = hidden_seqs(events)
    fork = Thread.create(home, user_id, new_id)
    log = fork.log
    try:
        log.append(k.SESSION_FORK, from_thread=thread_id, from_seq=len(events))
        for entry in Surface.from_events(events).entries:
            message = entry.message
            if entry.role == "user":
                fields: dict[str, object] = {"text": message.get("content", "")}
                if entry.checkpoint:
                    fields["checkpoint"] = {"forked_from": entry.seq}
                elif entry.seq in hidden:
                    fields["source"] = "inject"
                log.append(k.USER_MESSAGE, **fields)
            elif entry.role == "assistant":
                calls = [
                    {
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"],
                    }
                    for call in message.get("tool_calls", ())
                ]
                log.append(
                    k.ASSISTANT_MESSAGE, content=message.get("content", ""), tool_calls=calls
                )
            elif entry.role == "tool":
                log.append(
                    k.TOOL_RESULT, call_id=message.get("tool_call_id"), content=message["content"]
                )
        for note in notebook_at(events):
            kind, fields = note_event(note["key"], note["content"], note.get("source_ids"))
            log.append(kind, **fields)
        log.flush()
    finally:
        fork.close()
    return fork.id
