"""Random logs shaped like the ones the driver, the compaction and the front ends write:
prompts queued, edited, removed, restored and delivered, turns left open (a crash),
tool rounds, withdrawn prompts, injections, compactions whose checkpoint replaces a
run of the surface, archive records, notes, drafts, seams, forks, rewinds to earlier
events (and back to abandoned branches), and kinds this code does not know.

`write_mixed` appends them to a log with a live surface beside it (the surface the
driver would hold), so a compaction's `replaced` seqs are really on the surface, and
calls `pause` at random points: where a test closes the log cleanly (a resume index
written) and goes on as a later session would.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import msgspec

from engine import events as ev
from engine.continuity.archive.status import archive_failure, scope_binding
from engine.log import SessionLog
from engine.surface import Surface

SCOPE = scope_binding("local", "t")


def write_mixed(
    log: SessionLog,
    surface: Surface,
    rng: random.Random,
    turns: int,
    *,
    pause: Callable[[], None] | None = None,
) -> None:
    queued: list[int] = []
    removed: list[tuple[int, str]] = []
    turn = log.tail.last_turn
    for _ in range(turns):
        for _ in range(rng.randint(0, 2)):
            text = f"q{log.next_seq}"
            queued.append(log.append(ev.InboxQueued(text=text, waking=True)).seq)
        if queued and rng.random() < 0.3:
            log.append(ev.InboxEdited(item_id=rng.choice(queued), text=f"edited {log.next_seq}"))
        if queued and rng.random() < 0.2:
            item = queued.pop(rng.randrange(len(queued)))
            log.append(ev.InboxRemoved(item_id=item))
            removed.append((item, f"gone {item}"))
        if removed and rng.random() < 0.1:
            item, text = removed.pop()
            log.append(ev.InboxRestored(item_id=item, text=text))
            queued.append(item)
        turn = max(turn, log.tail.last_turn) + 1
        items = [queued.pop(0)] if queued and rng.random() < 0.7 else []
        log.append(ev.TurnStart(turn=turn, items=tuple(items)))
        prompts = [log.append(ev.UserMessage(text=f"u{turn}", item_id=i)).seq for i in items]
        if not items:
            prompts.append(log.append(ev.UserMessage(text=f"u{turn}")).seq)
        if rng.random() < 0.15:
            log.append(ev.UserMessage(text="context", source="inject"))
        if rng.random() < 0.1:
            # failed before any reply: its prompts leave the surface
            log.append(ev.TurnEnd(turn=turn, status="error", withdrawn=tuple(prompts)))
            continue
        if rng.random() < 0.3:
            calls = tuple(ev.ToolCall(f"c{log.next_seq}-{n}", "echo", "{}") for n in range(2))
            log.append(ev.AssistantMessage(content="", tool_calls=calls))
            for call in calls[: rng.randint(1, 2)]:  # one may be cut off
                log.append(ev.ToolResult(call_id=call.id, name=call.name, content="r" * 40))
        log.append(ev.AssistantMessage(content=f"a{turn} " * rng.randint(1, 30), tool_calls=()))
        if rng.random() < 0.1:
            log.append(ev.NoteSet(key=f"k{rng.randint(0, 9)}", content=f"n{log.next_seq}"))
        if rng.random() < 0.04:
            log.append(ev.NoteDelete(key=f"k{rng.randint(0, 9)}"))
        if rng.random() < 0.92:  # some turns stay open: a crash
            log.append(ev.TurnEnd(turn=turn, status="ok"))
        if rng.random() < 0.1:
            _compact(log, surface, rng, turn)
        if rng.random() < 0.05:
            log.append(ev.EndSeed(previous=log.next_seq - 1))
        if rng.random() < 0.05:
            log.append(ev.PromptDraft(text=rng.choice(["", f"draft {log.next_seq}"])))
        if rng.random() < 0.02:
            log.append(ev.SessionFork(from_thread="other", from_seq=1))
        if rng.random() < 0.02:
            log.append(ev.UnknownEvent(seq=0, ts="", kind="future/thing", fields={"x": 1}))
        if rng.random() < 0.04 and log.events:
            line = log.events if rng.random() < 0.7 else log.file_events  # or to a branch
            after = line[rng.randrange(len(line))].seq if rng.random() < 0.9 else 0
            log.append(ev.SessionRewind(after=after, prompt=None))
            queued.clear()
            removed.clear()
        if pause is not None and rng.random() < 0.05:
            pause()


def _compact(log: SessionLog, surface: Surface, rng: random.Random, turn: int) -> None:
    """A compaction bracket; most replace a run of the surface with a checkpoint."""
    entries = [e for e in surface.entries if not e.checkpoint]
    if len(entries) < 3:
        return
    owner = rng.choice([turn, None])
    start = log.append(ev.CompactStart(turn=owner)).seq
    outcome = rng.random()
    if outcome < 0.15:
        log.append(ev.CompactEnd(start=start, turn=owner, error="summary"))
        return
    if outcome < 0.25:
        return  # killed before the summary: the bracket stays open
    begin = rng.randrange(len(surface.entries) - 2)
    run = surface.entries[begin : begin + rng.randint(1, 3)]
    replaced = [e.seq for e in run]
    summary = log.append(
        ev.CompactSummary(
            start=start,
            summary="s",
            span=ev.SeqSpan(first=replaced[0], last=replaced[-1], count=len(replaced)),
            replaced=replaced,
            tokens=sum(e.tokens for e in run),
        )
    ).seq
    mark = ev.Checkpoint(
        summary=summary, start=start, first=replaced[0], last=replaced[-1], count=len(replaced)
    )
    log.append(ev.UserMessage(text=f"summary of {replaced}", checkpoint=mark))
    if rng.random() < 0.1:
        return  # killed while archiving
    ref = {"scope": SCOPE, "batch": start, "records": len(replaced), "omitted_records": 0}
    archive = rng.choice([ref, archive_failure(SCOPE, "disk"), msgspec.UNSET])
    log.append(ev.CompactEnd(start=start, turn=owner, archive=archive))
    if rng.random() < 0.3:
        log.append(ev.CompactArchived(start=start, archive=ref))
