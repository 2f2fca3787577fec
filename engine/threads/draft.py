"""The prompt a user had typed but not sent when the thread was closed.

A front end that closes a thread with text in its prompt keeps that text
in the log (`prompt/draft`), so quitting never loses it: the next front
end to open the thread reads it back into its prompt. The log is the only
place it lives (no file beside it), so it follows the thread's line
through rewinds and forks, and a crash after the append cannot lose it.
"""

from __future__ import annotations

from engine.events import PromptDraft, TurnEnd, UserMessage
from engine.log import LogWriteError, SessionLog


def current_draft(log: SessionLog) -> str:
    """The draft the newest `prompt/draft` on the line keeps ("" when none does): the log
    keeps it as it replays and appends (`LineState.draft`), so this reads no events."""
    return log.state.draft


def keep_draft(log: SessionLog, text: str) -> bool:
    """Make `text` the thread's draft ("" or only blanks: none). Appends only when it
    changes what the log keeps; False when the log cannot take it (a read-only view of a
    thread another process writes, or a failed write): the caller must save it elsewhere.
    """
    wanted = text if text.strip() else ""
    if wanted == current_draft(log):
        return True
    if log.read_only is not None:
        return False
    try:
        log.append(PromptDraft(text=wanted))
    except (LogWriteError, OSError):
        return False
    return True


def withdrawn_text(log: SessionLog, end: TurnEnd) -> str:
    """What a failed turn gives back: the text of the prompts it withdrew from the model's
    history (`turn/end` `withdrawn`), in order, a blank line between them ("" when it
    withdrew none: the model answered, so sending the prompt again would repeat it).

    A front end puts it back in its prompt, once, ready to send again; the log still
    holds each prompt as it was sent.
    """
    events = log.file_events  # seq n is the nth line of the file
    texts = []
    for seq in end.withdrawn:
        event = events[seq - 1] if 0 < seq <= len(events) else None
        if isinstance(event, UserMessage) and event.seq == seq:
            texts.append(event.text)
    return "\n\n".join(texts)
