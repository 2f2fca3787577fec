#!/usr/bin/env python3
"""Soak: random SIGKILLs against `trove --plain`, then count what a user would find lost.

    python -m devtools.soak [--kills N] [--seed S] [--home DIR] [--verbose]

One thread, N rounds. Each round starts the child against a scripted model
served from this process, types prompts that each plant a unique fact (and
often a `/compact`), through a pipe or at a terminal so prompts queue behind
replies, and kills it after a random delay or the instant its log shows a
chosen event (`devtools/soak_script.py`). After each kill the thread is
checked as a user would meet it: first read-only, as `trove history search`
sees it; then, in most rounds, reopened for writing, where a new prompt and a
`/compact` must succeed and the lock must be free after closing (the other
rounds leave recovery to the next child's start-up). `devtools/soak_counts.py`
defines the counts. The one result line goes to stdout, progress and details
to stderr; exit status 0 when every count but kills is 0 and no child exited by
itself, printed a traceback, or had input delivered twice or out of order. A
run that found something keeps its home and says where.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from devtools.scripted_server import ScriptedServer
from devtools.soak_child import STDERR_NAME, USER, LogWatcher, spawn, wait_until
from devtools.soak_counts import Counts, delivered_facts, findable
from devtools.soak_script import Plan, SoakModel, plan_round, write_config
from engine import events as ev
from engine.config import Config, load_config
from engine.continuity.archive.status import scan_history, scope_binding
from engine.continuity.search.view import HistoryView
from engine.events import LogEvent as Event
from engine.log import TailState, read_events
from engine.runtime import Runtime
from engine.threads.lock import ThreadLock
from engine.threads.paths import LOG_NAME, thread_dir
from engine.threads.thread import Thread
from engine.workspace.reports import thread_snapshot

__all__ = ["Soak", "findable", "load_config", "main", "write_config"]

REPORTED = ("unavailable", "partially_expired")
RECENT_ROUNDS = 6
OLDER_SAMPLE = 12
STEP_TIMEOUT = 20.0


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.rng = random.Random(args.seed)
        self.kills = args.kills
        self.verbose = args.verbose
        self.own_home = args.home is None
        self.home = Path(args.home or tempfile.mkdtemp(prefix="trove-soak-")).resolve()
        self.home.mkdir(parents=True, exist_ok=True)
        self.model = SoakModel(random.Random(self.rng.random()))
        self.server = ScriptedServer(models=["soak-model"], fallback=self.model)
        self.counts = Counts()
        self.planted: dict[str, int] = {}
        """Fact → the round that typed it."""
        self.thread_id = ""
        self.config_path = self.home / "soak-config.yaml"
        self.config: Config | None = None
        self.stderr_path = self.home / STDERR_NAME
        self.recover_next = ""
        """Why the next kill aims at start-up recovery ('' when it does not)."""
        self.generation = 0
        self.seen_open: set[tuple[str, int]] = set()
        self.seen_unarchived: set[tuple[str, int]] = set()

    # -- set-up ------------------------------------------------------------------

    def new_thread(self) -> None:
        self.generation += 1
        self.thread_id = f"soak-{self.generation}"
        Thread.create(self.home, USER, self.thread_id).close()
        self.planted = {}

    @property
    def thread_dir(self) -> Path:
        return thread_dir(self.home, USER, self.thread_id)

    @property
    def log_path(self) -> Path:
        return self.thread_dir / LOG_NAME

    # -- one round -----------------------------------------------------------------

    def run_child(self, plan: Plan) -> str:
        """Start a child, type the plan and kill it; what the kill was aimed at."""
        offset = self.log_path.stat().st_size
        self.model.paced = True
        child, typist = spawn(self.home, self.config_path, self.thread_id, self.rng, tty=plan.tty)
        spawned = time.monotonic()
        typist.type(plan.lines)
        watcher = LogWatcher(self.log_path, offset)
        aim = ("tty " if plan.tty else "") + (plan.target or plan.mode)
        try:
            if plan.mode == "timer":
                hit = wait_until(child, lambda: time.monotonic() - spawned >= plan.delay)
            else:
                target = plan.target

                def matches(event: Event) -> bool:
                    if plan.mode == "ready":
                        return True
                    if target == "checkpoint":
                        return isinstance(event, ev.UserMessage) and event.checkpoint is not None
                    return event.kind == target

                hit = wait_until(child, lambda: watcher.poll(matches), deadline=watcher.deadline)
                if hit:
                    when = time.monotonic() + plan.delay
                    hit = wait_until(child, lambda: time.monotonic() >= when)
                elif child.poll() is None:
                    self.counts.missed_targets += 1
                    aim += " (not seen)"
                else:
                    aim += " (the child exited first)"
            if hit and plan.delay:
                aim += f" +{plan.delay * 1000:.0f} ms"
        finally:
            alive = child.poll() is None
            if alive:
                child.send_signal(signal.SIGKILL)
                self.counts.kills += 1
            child.wait()
            typist.close()
            watcher.close()
        if not alive:
            self.counts.exited += 1
            self.note(f"the child exited by itself (status {child.returncode})")
        err = self.stderr_path.read_text(encoding="utf-8", errors="replace")
        if "Traceback" in err:
            self.counts.tracebacks += 1
            keep = self.home / f"traceback-{self.counts.kills}.txt"
            shutil.copy(self.stderr_path, keep)
            self.note(f"the child printed a traceback (kept in {keep})")
        return aim

    # -- checks --------------------------------------------------------------------

    def facts_to_check(self, round_no: int, delivered: dict[str, int], every: bool) -> list[str]:
        facts = [f for f in delivered if f in self.planted]
        if every:
            return facts
        recent = [f for f in facts if self.planted[f] >= round_no - RECENT_ROUNDS]
        older = [f for f in facts if self.planted[f] < round_no - RECENT_ROUNDS]
        return recent + self.rng.sample(older, min(OLDER_SAMPLE, len(older)))

    def check_facts(self, view: HistoryView, facts: list[str], after_recovery: bool) -> list[str]:
        missing = [fact for fact in facts if not findable(view, fact)]
        for fact in missing:
            if after_recovery:
                self.counts.lost_facts.add(fact)
            if view.status not in REPORTED:
                self.counts.unreported.add(fact)
        return missing

    def check_readonly(self, round_no: int) -> tuple[list[str], bool]:
        """Step 1; returns the facts missing (reported) and whether the load failed."""
        try:
            loaded = read_events(self.log_path)
        except Exception as exc:
            self.broken(f"the log does not load: {type(exc).__name__}: {exc}")
            return [], True
        if loaded.damage is not None:  # loads up to a bad line: still not a whole log
            self.broken(f"the log does not load whole: {loaded.damage}")
            return [], True
        events = loaded.events
        scope = scope_binding(USER, self.thread_id)
        tail = TailState()
        for event in events:
            tail.apply(event)
        if tail.open_compact is not None:
            self.seen_open.add((self.thread_id, tail.open_compact.seq))
        for start in scan_history(events, scope).unarchived:
            self.seen_unarchived.add((self.thread_id, start))
        self.counts.mid_compaction = len(self.seen_open)
        self.counts.capture_window = len(self.seen_unarchived)
        assert self.config is not None
        snapshot = thread_snapshot(self.home, USER, self.thread_id, self.config.task_continuity)
        try:
            view = snapshot.view()
            facts = self.facts_to_check(round_no, delivered_facts(events), every=False)
            missing = self.check_facts(view, facts, after_recovery=False)
        finally:
            if snapshot.store is not None:
                snapshot.store.close()
        return missing, False

    async def reopen(self, round_no: int, every: bool, pending: list[str]) -> None:
        """Step 2: open as a user would, check input and facts, then that it still works."""
        assert self.config is not None
        self.model.paced = False
        try:
            rt = Runtime.open(self.config, self.home, thread_id=self.thread_id)
        except Exception as exc:
            self.broken(f"the thread does not open: {type(exc).__name__}: {exc}")
            return
        try:
            log = rt.thread.log
            events = log.events
            self.check_input(events, {item.id for item in rt.driver.inbox})
            assert rt.continuity is not None
            view = rt.continuity.snapshot().view()
            facts = self.facts_to_check(round_no, delivered_facts(events), every)
            facts += [f for f in pending if f not in facts]
            missing = self.check_facts(view, facts, after_recovery=True)
            self.counts.recovered.update(f for f in pending if f not in missing)
            if not await self.still_works(rt, round_no):
                self.counts.wedged += 1
            self.counts.compactions = sum(1 for e in log.events if isinstance(e, ev.CompactStart))
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(rt.aclose(), STEP_TIMEOUT)
        try:
            ThreadLock.acquire(self.thread_dir, self.thread_id).release()
        except Exception as exc:
            self.counts.wedged += 1
            self.note(f"round {round_no}: the lock is still held after closing: {exc}")

    def check_input(self, events: list[Event], inbox: set[int]) -> None:
        queued = {e.seq for e in events if isinstance(e, ev.InboxQueued)}
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

    def broken(self, why: str) -> None:
        self.counts.unloadable += 1
        keep = self.home / f"unloadable-{self.thread_id}"
        shutil.copytree(self.thread_dir, keep, dirs_exist_ok=True)
        self.note(f"{why} (kept in {keep}); going on with a new thread")
        self.new_thread()

    def note(self, text: str) -> None:
        self.counts.notes.append(text)
        print(f"[soak] {text}", file=sys.stderr, flush=True)

    # -- the run ---------------------------------------------------------------------

    def run(self) -> Counts:
        self.server.start()
        try:
            write_config(self.config_path, self.server.base_url)
            self.config = load_config(self.config_path, home=self.home)
            self.new_thread()
            started = time.monotonic()
            round_no = 0
            while self.counts.kills < self.kills:
                round_no += 1
                plan = plan_round(self.rng, round_no, self.recover_next, self.planted)
                aim = self.run_child(plan)
                pending, failed = self.check_readonly(round_no)
                if failed:
                    self.recover_next = ""
                    continue
                skip = self.rng.random() < 0.25
                if skip:
                    self.recover_next = "unarchived" if pending else "maybe"
                else:
                    self.recover_next = ""
                    asyncio.run(self.reopen(round_no, every=False, pending=pending))
                if self.verbose:
                    print(
                        f"[soak] round {round_no}: killed at {aim}; "
                        f"unarchived facts {len(pending)}; {'skipped reopen' if skip else 'ok'}",
                        file=sys.stderr,
                    )
                if self.counts.kills % 25 == 0 or self.counts.kills == self.kills:
                    print(
                        f"[soak] {self.counts.kills}/{self.kills} kills, "
                        f"{time.monotonic() - started:.0f} s: {self.counts.line()}",
                        file=sys.stderr,
                        flush=True,
                    )
            # Every fact once more, after the last kill (and its recovery).
            asyncio.run(self.reopen(round_no + 1, every=True, pending=[]))
            elapsed = time.monotonic() - started
            print(
                f"[soak] {elapsed:.0f} s, {round_no} rounds, home {self.home}: "
                f"{self.counts.details()}",
                file=sys.stderr,
            )
        finally:
            self.server.stop()
        if self.own_home and self.counts.clean:
            shutil.rmtree(self.home, ignore_errors=True)
        return self.counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="devtools/soak.py", description="Random SIGKILLs against trove --plain."
    )
    parser.add_argument("--kills", type=int, default=300, help="SIGKILLs to deliver (300)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    parser.add_argument("--home", type=Path, default=None, help="data dir (default: a temp dir)")
    parser.add_argument("--verbose", action="store_true", help="one stderr line per round")
    args = parser.parse_args(argv)
    if args.kills < 1:
        parser.error("--kills must be at least 1")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2**32)
    print(f"[soak] seed {args.seed}", file=sys.stderr, flush=True)
    counts = Soak(args).run()
    print(counts.line(), flush=True)
    return 0 if counts.clean else 1


if __name__ == "__main__":
    sys.exit(main())
