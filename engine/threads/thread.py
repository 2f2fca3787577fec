"""A thread on disk: created, resumed, viewed read-only, or pending until its first message.

A thread is a directory `users/{user}/threads/{thread}/` holding its
`session.jsonl`. Resuming appends `session/end-seed` at the seam, which is
the lifecycle evidence that makes anything left open before it stale.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from msgspec import Struct

from engine.events import (
    EndSeed,
    InboxQueued,
    PromptDraft,
    UserMessage,
    line_start,
)
from engine.log import SessionLog
from engine.log.log_file import open_log
from engine.surface.fold import SurfaceFold
from engine.threads.lock import ThreadLock
from engine.threads.paths import (
    LOG_NAME,
    ThreadNotFoundError,
    has_log,
    new_thread_id,
    thread_dir,
)
from engine.threads.retry import settle_retry
from engine.util.private import private_dir

_PROMPT_KINDS = (line_start(UserMessage), line_start(InboxQueued))
_DRAFT_KIND = line_start(PromptDraft)


def has_history(path: Path) -> bool:
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
    use, and the command as it can be typed (engine.util.invocation: its full
    path when `trove` is not on PATH), so the line, pasted as it is, opens this
    thread and no other.
    """
    import shlex

    from engine.config import Config, default_home
    from engine.util.invocation import trove_command

    words = [trove_command()]
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
            log = SessionLog.open(directory / LOG_NAME, fold=SurfaceFold)
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
        return self.log.has_history

    @classmethod
    def resume(cls, home: Path, user_id: str, thread_id: str) -> Thread:
        """Take the writer lock, replay the log and mark the seam with an end-seed; a
        /retry the last lifecycle did not finish is undone (engine.threads.retry).

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
            log = SessionLog.open(directory / LOG_NAME, fold=SurfaceFold)
            if log.events:
                log.append(EndSeed(previous=log.next_seq - 1))
                settle_retry(log)  # a /retry the last lifecycle left unfinished is undone
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
        log = SessionLog.open(directory / LOG_NAME, read_only=reason, fold=SurfaceFold)
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
