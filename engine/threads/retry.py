"""A `/retry` that did not end whole is undone: the thread goes back to the reply it replaced.

/retry appends a `session/rewind` marked `retry` that branches the thread just
after the prompt it answers again, and a turn follows on that branch. The reply
it replaces stays the thread's until that turn ends whole (`turn/end` status
"ok"): a cancel, a failed or cut-off stream, or a kill -9 leaves the retry
unfinished, and `undo_retry` undoes it with one more rewind, back to the tip
the retry left. The thread then has the old reply or the new one, never
neither; the attempt stays in the log as a branch. Prompts queued or steered
in while the retry ran are queued again in that same line, with their ids,
so nothing typed is lost with the branch.
"""

from __future__ import annotations

from engine.events import (
    InboxEdited,
    InboxQueued,
    InboxRemoved,
    InboxRestored,
    Requeued,
    SessionRewind,
    TurnEnd,
    UserMessage,
)
from engine.log import SessionLog


def unfinished_retry(log: SessionLog) -> SessionRewind | None:
    """The line's newest rewind, when it is a /retry whose turn has not ended whole.

    Reads from the end: the newest rewind (the file's facts name it), then the line
    back to the newest whole turn or that rewind. A thread that never
    branched has one list for both (`SessionLog.file_events`) and costs nothing.
    """
    if log.events is log.file_events:
        return None
    if not log.facts.rewinds:
        return None
    seq, _ = log.facts.rewinds[-1]
    newest = log.file_events[seq - 1]  # the file's events are in seq order, from 1
    if type(newest) is not SessionRewind or not newest.retry:
        return None
    for event in reversed(log.events):
        if event.seq <= newest.seq:
            return newest
        if type(event) is TurnEnd and event.status == "ok":
            return None
    return newest


def undo_retry(log: SessionLog, retry: SessionRewind) -> tuple[Requeued, ...]:
    """Go back to the tip `retry` left, with what was queued on its branch queued again
    (in the same line); returns those items. The line is fsynced before this returns."""
    branch = []
    for event in reversed(log.events):
        if event.seq <= retry.seq:
            break
        branch.append(event)
    branch.reverse()
    waiting: dict[int, str] = {}
    for event in branch:
        if isinstance(event, InboxQueued):
            waiting[event.seq] = event.text
        elif isinstance(event, InboxEdited | InboxRestored):
            waiting[event.item_id] = event.text
        elif isinstance(event, InboxRemoved):
            waiting.pop(event.item_id, None)
        elif isinstance(event, UserMessage) and event.item_id is not None:
            waiting[event.item_id] = event.text  # steering the retry took: asked, not answered
    queued = tuple(Requeued(item_id=item, text=text) for item, text in sorted(waiting.items()))
    log.append(SessionRewind(after=retry.seq - 1, undoes=retry.seq, queued=queued))
    log.flush()
    return queued


def settle_retry(log: SessionLog) -> bool:
    """At a writer's open: a retry a crash cut off is undone (True: it was)."""
    retry = unfinished_retry(log)
    if retry is None:
        return False
    undo_retry(log, retry)
    return True
