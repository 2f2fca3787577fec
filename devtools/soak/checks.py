"""The two steps after a kill, as a user meets the thread: read-only (listed, searched,
the facts findable) and reopened for writing (no input lost, the facts, it still works)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable
from pathlib import Path

from devtools.file_damage import keep_drawn
from devtools.soak.counts import Counts
from devtools.soak.plan import FACT
from engine import events as ev
from engine.config import Config
from engine.continuity.archive.status import scan_history, scope_binding
from engine.continuity.search.view import HistoryView
from engine.events import LogEvent as Event
from engine.log import TailState, read_events
from engine.runtime import Runtime
from engine.threads.lock import ThreadLock
from engine.threads.paths import LOG_NAME, thread_dir
from engine.workspace.reports import thread_snapshot
from engine.workspace.search_all import search_all
from engine.workspace.summary import summarize

USER = "local"
REPORTED = ("unavailable", "partially_expired")
RECENT_ROUNDS = 6
OLDER_SAMPLE = 12
STEP_TIMEOUT = 20.0


def findable(view: HistoryView, fact: str) -> bool:
    """Word for word, as a user or the model finds it: search, then read the source."""
    result = view.search(fact)
    for item in result.get("results", []):
        if fact in item.get("excerpt", ""):
            return True
        if fact in str(view.read(item["id"]).get("text", "")):
            return True
    return False


def delivered_facts(events: list[Event]) -> dict[str, int]:
    """Fact → the seq of the user message that delivered it."""
    out: dict[str, int] = {}
    for event in events:
        if isinstance(event, ev.UserMessage) and event.item_id is not None:
            for fact in FACT.findall(event.text):
                out.setdefault(fact, event.seq)
    return out


class Checks:
    """The checks of the threads in one soak home: what they find goes into `counts`.

    A thread that no longer loads, lists or opens is not counted here: the step
    returns why, and the soak keeps the thread aside and goes on with a new one.
    """

    def __init__(
        self, home: Path, counts: Counts, rng: random.Random, note: Callable[[str], None]
    ) -> None:
        self.home = home
        self.counts = counts
        self.rng = rng
        self.note = note
        self.seen_open: set[tuple[str, int]] = set()
        self.seen_unarchived: set[tuple[str, int]] = set()

    def facts_to_check(
        self, planted: dict[str, int], round_no: int, delivered: dict[str, int], every: bool
    ) -> list[str]:
        """The delivered facts planted in the last few rounds, and a sample of older ones."""
        facts = [f for f in delivered if f in planted]
        if every:
            return facts
        recent = [f for f in facts if planted[f] >= round_no - RECENT_ROUNDS]
        older = [f for f in facts if planted[f] < round_no - RECENT_ROUNDS]
        return recent + self.rng.sample(older, min(OLDER_SAMPLE, len(older)))

    def check_facts(self, view: HistoryView, facts: list[str], after_recovery: bool) -> list[str]:
        missing = [fact for fact in facts if not findable(view, fact)]
        for fact in missing:
            if after_recovery:
                self.counts.lost_facts.add(fact)
            if view.status not in REPORTED:
                self.counts.unreported.add(fact)
        return missing

    def readonly(
        self, config: Config, thread_id: str, planted: dict[str, int], round_no: int
    ) -> tuple[list[str], str | None]:
        """Step 1: the facts missing (reported), or why the thread does not load whole,
        cannot be listed or cannot be searched."""
        try:
            loaded = read_events(thread_dir(self.home, USER, thread_id) / LOG_NAME)
        except Exception as exc:
            return [], f"the log does not load: {type(exc).__name__}: {exc}"
        if loaded.damage is not None:  # loads up to a bad line: still not a whole log
            return [], f"the log does not load whole: {loaded.damage}"
        events = loaded.events
        scope = scope_binding(USER, thread_id)
        tail = TailState()
        for event in events:
            tail.apply(event)
        if tail.open_compact is not None:
            self.seen_open.add((thread_id, tail.open_compact.seq))
        for start in scan_history(events, scope).unarchived:
            self.seen_unarchived.add((thread_id, start))
        self.counts.mid_compaction = len(self.seen_open)
        self.counts.capture_window = len(self.seen_unarchived)
        try:  # `trove threads` and `history search --all`, which read the caches beside it
            summarize(self.home, USER, thread_id)
            search_all(self.home, USER, "remember")
        except Exception as exc:
            return [], f"the thread cannot be listed or searched: {type(exc).__name__}: {exc}"
        snapshot = thread_snapshot(self.home, USER, thread_id, config.task_continuity)
        try:
            view = snapshot.view()
            facts = self.facts_to_check(planted, round_no, delivered_facts(events), every=False)
            missing = self.check_facts(view, facts, after_recovery=False)
        finally:
            if snapshot.store is not None:
                snapshot.store.close()
        return missing, None

    async def reopen(
        self,
        config: Config,
        thread_id: str,
        planted: dict[str, int],
        round_no: int,
        every: bool,
        pending: list[str],
    ) -> str | None:
        """Step 2: open as a user would, check input and facts, then that it still works;
        why the thread does not open, or None."""
        try:
            rt = Runtime.open(config, self.home, thread_id=thread_id)
        except Exception as exc:
            return f"the thread does not open: {type(exc).__name__}: {exc}"
        try:
            log = rt.thread.log
            events = log.events
            self.check_input(events, {item.id for item in rt.driver.inbox})
            assert rt.continuity is not None
            view = rt.continuity.snapshot().view()
            facts = self.facts_to_check(planted, round_no, delivered_facts(events), every)
            facts += [f for f in pending if f not in facts]
            missing = self.check_facts(view, facts, after_recovery=True)
            self.counts.recovered.update(f for f in pending if f not in missing)
            if not await self.still_works(rt, round_no):
                self.counts.wedged += 1
            self.counts.compactions = sum(1 for e in log.events if isinstance(e, ev.CompactStart))
        finally:
            with contextlib.suppress(Exception):
                keep_drawn(rt)  # what the app's quit keeps
            with contextlib.suppress(Exception):
                await asyncio.wait_for(rt.aclose(), STEP_TIMEOUT)
        try:
            ThreadLock.acquire(thread_dir(self.home, USER, thread_id), thread_id).release()
        except Exception as exc:
            self.counts.wedged += 1
            self.note(f"round {round_no}: the lock is still held after closing: {exc}")
        return None

    def check_input(self, events: list[Event], inbox: set[int]) -> None:
        queued = {e.seq for e in events if isinstance(e, ev.InboxQueued)}
        queued |= {e.seq for e in events if isinstance(e, ev.SessionRewind) and e.resend}
        removed = {e.item_id for e in events if isinstance(e, ev.InboxRemoved)}
        delivered: dict[int, int] = {}
        for e in events:
            if isinstance(e, ev.UserMessage) and e.item_id is not None:
                delivered[e.item_id] = delivered.get(e.item_id, 0) + 1
        self.counts.lost_input |= queued - delivered.keys() - removed - inbox
        self.counts.restored |= inbox
        self.counts.duplicated |= {i for i, n in delivered.items() if n > 1}
        self.counts.duplicated |= inbox & delivered.keys()
        order = [
            e.item_id for e in events if isinstance(e, ev.UserMessage) and e.item_id is not None
        ]
        self.counts.reordered |= {b for a, b in zip(order, order[1:], strict=False) if b < a}

    async def still_works(self, rt: Runtime, round_no: int) -> bool:
        log = rt.thread.log
        if log.tail.open_compact is not None or log.tail.open_turn is not None:
            self.note(f"round {round_no}: a bracket is still open after reopening")
            return False
        try:
            rt.driver.send(f"check after kill {round_no}")
            await asyncio.wait_for(rt.driver.when_idle(), STEP_TIMEOUT)
        except Exception as exc:
            self.note(f"round {round_no}: a new prompt did not finish: {type(exc).__name__} {exc}")
            return False
        ends = [e for e in log.events if isinstance(e, ev.TurnEnd)]
        if not ends or ends[-1].status != "ok" or rt.driver.inbox:
            self.note(f"round {round_no}: the new prompt ended {ends[-1] if ends else None}")
            return False
        try:
            result = await asyncio.wait_for(rt.commands.run("/compact"), STEP_TIMEOUT)
        except Exception as exc:
            self.note(f"round {round_no}: /compact did not finish: {type(exc).__name__} {exc}")
            return False
        if not result.ok:
            self.note(f"round {round_no}: /compact failed: {result.text}")
            return False
        return True
