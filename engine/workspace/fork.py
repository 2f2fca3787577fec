"""A fork: a new thread with a parent's messages and notes up to a point, not its archive."""

from __future__ import annotations

from pathlib import Path

from engine.events import (
    AssistantMessage,
    Checkpoint,
    SessionFork,
    SessionSystem,
    ToolCall,
    ToolResult,
    UserMessage,
)
from engine.log import read_events
from engine.log.line import current_line
from engine.threads.paths import LOG_NAME, ThreadNotFoundError, thread_dir
from engine.threads.thread import Thread


def fork_thread(
    home: Path, user_id: str, thread_id: str, *, upto: int | None = None, new_id: str | None = None
) -> str:
    """A new thread with the parent's messages and notes, but not its archive.

    The fork starts with `session/fork`; the messages are copied as the
    parent's surface (checkpoints included), and its notes as note writes.
    No archive reference is copied, so inherited citations read as
    unavailable until they are verified again in the fork. The thread's own
    system prompt (`/system`) goes along.
    """
    from engine.continuity.archive.extract import hidden_seqs
    from engine.continuity.notes.note import note_event, notebook_at
    from engine.surface import Surface

    source = thread_dir(home, user_id, thread_id) / LOG_NAME
    if not source.is_file():
        raise ThreadNotFoundError(f"no thread {thread_id!r} for user {user_id!r}")
    everything = read_events(source).events
    events = current_line(everything)  # the branch the thread is on
    system = next((e for e in reversed(everything) if isinstance(e, SessionSystem)), None)
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
                said = entry.event
                thought = said if isinstance(said, AssistantMessage) else None  # on screen only
                log.append(
                    AssistantMessage(
                        content=message.get("content", ""),
                        tool_calls=calls,
                        reasoning=thought.reasoning if thought else None,
                        reasoning_seconds=thought.reasoning_seconds if thought else None,
                    )
                )
            elif entry.role == "tool":
                log.append(ToolResult(call_id=message["tool_call_id"], content=message["content"]))
        for note in notebook_at(events):
            log.append(note_event(note.key, note.content, list(note.source_ids)))
        if system is not None and system.text is not None:  # the thread's /system goes along
            log.append(SessionSystem(text=system.text))
        log.flush()
    finally:
        fork.close()
    return fork.id
