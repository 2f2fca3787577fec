#!/usr/bin/env python3
"""Soak: random SIGKILLs against `trove --plain`, then count what a user would find lost.

    python3 devtools/soak.py [--kills N] [--seed S] [--home DIR] [--verbose]

One thread, N rounds. Each round starts `python -m cli.main --plain --thread T`
against a scripted OpenAI-compatible model served from this process, types
prompts that each plant a unique fact (`remember code FACT-0007-2-1f3a9c0b …`),
often a `/compact`, and SIGKILLs it at a random moment. Half the rounds type
into a pipe that stays open (the REPL takes one line after another); the other
half type at a terminal (a pty), with pauses, so prompts queue while a reply
streams and while a `/compact` runs. The kill comes either after a random delay
(from the spawn, covering start-up and resume, or from the first event it
logs), or the instant its log shows a chosen event (compact/start: mid-summary;
compact/summary; the checkpoint: the window between the checkpoint and the
archive write; compact/end; turn/start, assistant/message and inbox/queued:
mid-turn; session/end-seed: start-up recovery), sometimes after a few more
milliseconds. The model streams with a small delay per chunk, and the context
window is small, so turns and compactions (pressure and manual) are in flight
most of the time.

Between kills, files beside the log meet the world too, at random moments while
the child runs: `session.lock` is deleted (a cleanup script), or a cache beside
the log (`history.terms`, the replay snapshot, `drawn.json`, `summary.cache`)
is damaged in one of the ways of devtools/file_damage.py (deleted, cut,
zero-filled, a byte flipped, a huge length, a link to /dev/zero or a FIFO,
another thread's copy, from a donor thread made at the start). So that each cache exists to be
damaged, the soak's own reopen keeps the drawn lines as the app's quit does and
writes a replay snapshot as it closes whatever the log's length (the threshold
lowered in this process only), and step 1 lists the thread and searches every
thread as `trove threads` and `--all` do.

After each kill the thread is checked in two steps, as a user would meet it:

1. Read-only, before anything reopens it (what `trove threads`, `--all` and
   `trove history search` show): every fact checked must be findable word for
   word, or the archive status must say why not (`unavailable`, e.g. a
   compaction cut before its archive write; `partially_expired`).
2. Reopened for writing (most rounds; the rest leave recovery to the next
   child's start-up, so kills land in it too): `engine.runtime.Runtime.open`,
   which takes the writer lock, marks the seam and re-captures interrupted
   compactions, with a real client on the scripted model. Then a new prompt
   must run to its end, `/compact` must succeed, and after closing, the lock
   must be free.

The counts (each a distinct item over the whole run, so a fact missing in
several rounds counts once):

- kills: SIGKILLs delivered to a live child.
- lost_input: prompts the log accepted (`inbox/queued`) that the reopened
  thread neither delivered (a `user/message` with that item id), nor removed,
  nor has back in `runtime.driver.inbox`.
- lost_facts: planted facts whose prompt was delivered but which, once the
  thread is reopened (recovery done), are neither on the active surface nor
  findable word for word in the archive through history search (the
  HistoryView the model's tools use). Counted whatever the status says.
  Retention is sized so nothing expires in a run (`max_batches` and
  `max_records_per_batch` far above what a run makes), so an expired batch
  here would be a lost fact too.
- unreported: facts not findable while the status (read-only, or after
  reopening) is neither `unavailable` nor `partially_expired`, i.e. claims
  nothing is missing.
- wedged: rounds where the reopened thread could not take its lock, a new
  prompt did not finish (or did not end `ok`, or left input queued), or
  `/compact` did not succeed, each within 20 s.
- unloadable: rounds where the log failed to load whole (a bad line, which
  readers now load up to and the writer would set aside), the thread could
  not be listed or searched with every thread, or failed to open (any
  exception). The damaged thread is kept aside and the run goes on with a new
  one.

Per-round facts checked: those planted in the last few rounds plus a random
sample of older ones; after the last kill every fact is checked once more.
Progress and a details line (kills that landed mid-compaction, in the capture
window, facts recovered by re-capture, lock files deleted and caches damaged
under a live child, child crashes, tracebacks) go to stderr; the one result
line goes to stdout. Exit status 0 when every count but kills is 0 and no
child exited by itself, printed a traceback, or had input delivered twice or
out of order, and no second writer got a thread whose lock file was deleted
under its live child (those are in the details line); else 1.
A run that found something keeps its home (the thread, any damaged copy, the
child's traceback) and says where.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import pty
import random
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devtools.file_damage import CREATING, DAMAGES, NAMES, SIDECARS, damage_file, keep_drawn
from devtools.scripted_server import Reply, ScriptedServer, text
from engine import events as ev
from engine.compaction.prompt import SUMMARY_INSTRUCTIONS
from engine.config import Config, load_config
from engine.continuity.archive.status import scan_history, scope_binding
from engine.continuity.search.view import HistoryView
from engine.events import LogEvent as Event
from engine.log import LogCorruptError, TailState, decode_line, read_events, snapshot
from engine.runtime import Runtime
from engine.threads.lock import LOCK_NAME, ThreadLock, ThreadLockedError
from engine.threads.paths import LOG_NAME, thread_dir
from engine.threads.thread import Thread
from engine.workspace.reports import thread_snapshot
from engine.workspace.search_all import search_all
from engine.workspace.summary import summarize

REPO = Path(__file__).resolve().parent.parent

USER = "local"
FACT = re.compile(r"FACT-\d{4}-\d-[0-9a-f]{8}")
REPORTED = ("unavailable", "partially_expired")
RECENT_ROUNDS = 6
OLDER_SAMPLE = 12
STEP_TIMEOUT = 20.0
DONOR = "soak-donor"
"""The thread whose caches are "another thread's copy"."""
FAULT_CHANCE = {"lock": 0.25, "sidecar": 0.35}
"""How often a round has each fault under its live child."""
FILLER = "the quick brown fox jumps over a lazy dog while the river keeps running past the old mill"
WORDS = FILLER.split()


class SoakModel:
    """The scripted model: paced replies that never repeat a fact, summaries that omit them.

    A summary or reply that repeated a fact would keep it findable on the
    surface even if its original were lost, and hide exactly what the soak
    looks for.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.paced = True

    def _words(self, n: int) -> str:
        return " ".join(self.rng.choices(WORDS, k=n))

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or [{}]
        first = messages[0] if isinstance(messages[0], dict) else {}
        if first.get("role") == "system" and first.get("content") == SUMMARY_INSTRUCTIONS:
            content = "The user planted codes to remember; " + self._words(14) + "."
            rate = 120.0
        else:
            content = "Noted, I will keep that in mind. " + self._words(28) + "."
            rate = 350.0
        return text(content, chunk_chars=4, per_second=rate if self.paced else None)


def write_config(path: Path, base_url: str) -> None:
    path.write_text(
        "model:\n"
        f"  base_url: {base_url}\n"
        "  api_key: soak-key\n"
        "  name: soak-model\n"
        "  context_window: 900\n"
        "  max_retries: 0\n"
        "  timeout: 15\n"
        "compaction:\n"
        "  threshold: 0.5\n"
        "  keep_recent_tokens: 120\n"
        "task_continuity:\n"
        "  max_batches: 1000000\n"
        "  max_records_per_batch: 1000000\n",
        encoding="utf-8",
    )


@dataclass
class Plan:
    lines: list[str]
    mode: str
    """'timer' (from spawn), 'ready' (from the first logged event), or 'event'."""
    delay: float
    target: str = ""
    tty: bool = False
    """Typed at a terminal (a pty): prompts queue while a turn or /compact runs."""
    faults: list[tuple[float, str]] = field(default_factory=list)
    """(seconds after the spawn, 'lock' or 'sidecar'): done then, if the child still runs."""


@dataclass
class Counts:
    kills: int = 0
    lost_input: set[int] = field(default_factory=set)
    lost_facts: set[str] = field(default_factory=set)
    unreported: set[str] = field(default_factory=set)
    wedged: int = 0
    unloadable: int = 0
    # details, for the stderr line
    mid_compaction: int = 0
    capture_window: int = 0
    recovered: set[str] = field(default_factory=set)
    exited: int = 0
    tracebacks: int = 0
    duplicated: set[int] = field(default_factory=set)
    reordered: set[int] = field(default_factory=set)
    restored: set[int] = field(default_factory=set)
    compactions: int = 0
    locks_deleted: int = 0
    second_writers: int = 0
    sidecars_damaged: dict[str, int] = field(default_factory=dict)
    missed_targets: int = 0
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"kills={self.kills} lost_input={len(self.lost_input)} "
            f"lost_facts={len(self.lost_facts)} unreported={len(self.unreported)} "
            f"wedged={self.wedged} unloadable={self.unloadable}"
        )

    def details(self) -> str:
        return (
            f"mid_compaction={self.mid_compaction} capture_window={self.capture_window} "
            f"recovered_facts={len(self.recovered)} restored_input={len(self.restored)} "
            f"compactions={self.compactions} locks_deleted={self.locks_deleted} "
            f"second_writers={self.second_writers} "
            f"sidecars_damaged={sum(self.sidecars_damaged.values())} "
            f"({', '.join(f'{k} {n}' for k, n in sorted(self.sidecars_damaged.items()))}) "
            f"missed_targets={self.missed_targets} child_exits={self.exited} "
            f"tracebacks={self.tracebacks} duplicated_input={len(self.duplicated)} "
            f"reordered_input={len(self.reordered)}"
        )

    @property
    def clean(self) -> bool:
        return not (
            self.lost_input
            or self.lost_facts
            or self.unreported
            or self.wedged
            or self.unloadable
            or self.exited
            or self.tracebacks
            or self.second_writers
            or self.duplicated
            or self.reordered
        )


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
        self.stderr_path = self.home / "child-stderr.txt"
        self.recover_next = ""
        """Why the next kill aims at start-up recovery ('' when it does not)."""
        self.generation = 0
        self.seen_open: set[tuple[str, int]] = set()
        self.seen_unarchived: set[tuple[str, int]] = set()
        self.fifo = self.home / "soak-fifo"
        """What a cache is replaced by a link to (nothing ever writes to it)."""
        self.spawn_offset = 0
        """The log's size when the running child was spawned."""
        self.faults: list[tuple[float, str]] = []
        """The running child's faults still to come (seconds after its spawn, which)."""

    # -- set-up ------------------------------------------------------------------

    async def make_donor(self) -> None:
        """A thread with every cache (terms, snapshot, drawn lines, summary): what another
        thread's copy of one is copied from."""
        assert self.config is not None
        self.model.paced = False
        Thread.create(self.home, USER, DONOR).close()
        rt = Runtime.open(self.config, self.home, thread_id=DONOR)
        try:
            for prompt in ("a donor prompt to compact", "and one more"):
                rt.driver.send(prompt)
                await asyncio.wait_for(rt.driver.when_idle(), STEP_TIMEOUT)
            await asyncio.wait_for(rt.commands.run("/compact"), STEP_TIMEOUT)
            keep_drawn(rt)
        finally:
            await rt.aclose()
        summarize(self.home, USER, DONOR)

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

    def plan(self, round_no: int) -> Plan:
        rng = self.rng
        prompts = []
        # Two prompts at least before a /compact aimed at: with fewer, the
        # recent context kept can leave nothing worth compacting.
        for i in range(rng.randint(2, 4) if round_no > 1 else 1):
            fact = f"FACT-{round_no % 10000:04d}-{i}-{rng.getrandbits(32):08x}"
            self.planted[fact] = round_no
            words = " ".join(rng.choices(WORDS, k=rng.randint(8, 30)))
            prompts.append(f"remember code {fact} because {words}")
        roll = rng.random()
        pending = self.recover_next == "unarchived"
        if self.recover_next and roll < 0.7:
            # The last reopen was skipped: hit the child's own start-up recovery.
            plan = Plan(prompts, "event", rng.choice([0.0, 0.0, rng.uniform(0, 0.03)]))
            plan.target = (
                rng.choice([ev.kind_of(ev.EndSeed), ev.kind_of(ev.CompactArchived)])
                if pending
                else ev.kind_of(ev.EndSeed)
            )
        elif roll < 0.2:
            plan = Plan(prompts, "timer", rng.uniform(0.0, 3.0))
        elif roll < 0.4:
            plan = Plan(prompts, "ready", rng.uniform(0.0, 1.5))
        else:
            target = rng.choices(
                [
                    "checkpoint",
                    ev.kind_of(ev.CompactStart),
                    ev.kind_of(ev.CompactSummary),
                    ev.kind_of(ev.CompactEnd),
                    ev.kind_of(ev.TurnStart),
                    ev.kind_of(ev.AssistantMessage),
                    ev.kind_of(ev.InboxQueued),
                ],
                weights=[8, 4, 2, 2, 1, 1, 1],
            )[0]
            if target == ev.kind_of(ev.CompactStart):
                delay = rng.uniform(0, 0.3)
            elif target in (ev.kind_of(ev.TurnStart), ev.kind_of(ev.InboxQueued)):
                delay = rng.uniform(0, 0.25)
            else:
                delay = rng.choice([0.0, 0.0, rng.uniform(0, 0.02)])
            plan = Plan(prompts, "event", delay, target)
        if round_no == 1 and plan.target not in (
            ev.kind_of(ev.TurnStart),
            ev.kind_of(ev.AssistantMessage),
            "",
        ):
            plan = Plan(prompts, "ready", rng.uniform(0.0, 1.5))  # nothing to compact yet
        lines = list(prompts)
        if plan.target in (
            "checkpoint",
            ev.kind_of(ev.CompactStart),
            ev.kind_of(ev.CompactSummary),
            ev.kind_of(ev.CompactEnd),
        ):
            lines.insert(rng.randint(2, len(lines)), "/compact")
        elif rng.random() < 0.3:
            lines.insert(rng.randint(1, len(lines)), "/compact")
        plan.lines = lines
        plan.tty = rng.random() < 0.5
        for fault, chance in FAULT_CHANCE.items():
            if rng.random() < chance:
                plan.faults.append((rng.uniform(0.0, 1.5), fault))
        return plan

    def spawn(self, tty: bool) -> tuple[subprocess.Popen[bytes], Typist]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("OPENAI_") and key != "TROVE_HOME"
        }
        env["PYTHONPATH"] = str(REPO)
        env["TERM"] = "xterm"
        command = [
            sys.executable,
            "-m",
            "cli.main",
            "--plain",
            "--home",
            str(self.home),
            "--config",
            str(self.config_path),
            "--thread",
            self.thread_id,
        ]
        with self.stderr_path.open("wb") as err:
            if not tty:
                child = subprocess.Popen(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    cwd=REPO,
                    env=env,
                )
                return child, Typist(child, None, self.log_path, self.rng)
            master, slave = pty.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
            try:
                child = subprocess.Popen(
                    command,
                    stdin=slave,
                    stdout=slave,
                    stderr=err,
                    cwd=REPO,
                    env=env,
                    start_new_session=True,
                )
            finally:
                os.close(slave)
            return child, Typist(child, master, self.log_path, self.rng)

    def run_child(self, plan: Plan) -> str:
        """Start a child, type the plan and kill it; what the kill was aimed at."""
        offset = self.spawn_offset = self.log_path.stat().st_size
        self.model.paced = True
        child, typist = self.spawn(plan.tty)
        spawned = time.monotonic()
        self.faults = sorted((spawned + delay, fault) for delay, fault in plan.faults)
        typist.type(plan.lines)
        watcher = LogWatcher(self.log_path, offset)
        aim = ("tty " if plan.tty else "") + (plan.target or plan.mode)
        try:
            if plan.mode == "timer":
                hit = self._wait(child, lambda: time.monotonic() - spawned >= plan.delay)
            else:
                target = plan.target

                def matches(event: Event) -> bool:
                    if plan.mode == "ready":
                        return True
                    if target == "checkpoint":
                        return isinstance(event, ev.UserMessage) and event.checkpoint is not None
                    return event.kind == target

                hit = self._wait(child, lambda: watcher.poll(matches), deadline=watcher.deadline)
                if hit:
                    when = time.monotonic() + plan.delay
                    hit = self._wait(child, lambda: time.monotonic() >= when)
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

    def _wait(
        self,
        child: subprocess.Popen[bytes],
        done: Callable[[], bool],
        deadline: Callable[[], bool] | None = None,
    ) -> bool:
        """Poll until `done`; False when the child died, `deadline` passed or 30 s did."""
        end = time.monotonic() + 30.0
        while time.monotonic() < end and not (deadline and deadline()):
            if child.poll() is not None:
                return False
            if self.faults and time.monotonic() >= self.faults[0][0]:
                self.fault(self.faults.pop(0)[1])
            if done():
                return True
            time.sleep(0.0005)
        return False

    def fault(self, which: str) -> None:
        """Under the live child: delete the lock file, or damage one cache beside the log."""
        if which == "lock":
            try:
                (self.thread_dir / LOCK_NAME).unlink()
            except FileNotFoundError:
                return
            self.counts.locks_deleted += 1
            if self.log_path.stat().st_size > self.spawn_offset:  # the child has the thread
                try:
                    ThreadLock.acquire(self.thread_dir, self.thread_id).release()
                except ThreadLockedError:
                    return
                self.counts.second_writers += 1
                self.note("a second writer got the thread after its lock file was deleted")
            return
        kinds = [k for k in SIDECARS if (self.thread_dir / NAMES[k]).parent.is_dir()]
        kind = self.rng.choice(kinds)
        path = self.thread_dir / NAMES[kind]
        try:
            info: os.stat_result | None = os.lstat(path)
        except FileNotFoundError:
            info = None
        if info is None:
            choices: tuple[str, ...] = CREATING
        elif not stat.S_ISREG(info.st_mode):
            choices = ("deleted", *CREATING)
        elif info.st_size > 1 << 20:  # made huge before: not filled with zeros here
            choices = ("deleted", "truncated", "flipped", *CREATING)
        else:
            choices = DAMAGES
        damage = self.rng.choice(choices)
        other = thread_dir(self.home, USER, DONOR) / NAMES[kind]
        try:
            damage_file(kind, damage, path, rng=self.rng, other=other, fifo=self.fifo)
        except FileNotFoundError:
            return  # replaced or removed by the child meanwhile: nothing damaged
        key = f"{kind}:{damage}"
        self.counts.sidecars_damaged[key] = self.counts.sidecars_damaged.get(key, 0) + 1

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
        try:  # `trove threads` and `history search --all`, which read the caches beside it
            summarize(self.home, USER, self.thread_id)
            search_all(self.home, USER, "remember")
        except Exception as exc:
            self.broken(f"the thread cannot be listed or searched: {type(exc).__name__}: {exc}")
            return [], True
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
                keep_drawn(rt)  # what the app's quit keeps
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
        thresholds = snapshot.MIN_EVENTS, snapshot.STALE_EVENTS
        snapshot.MIN_EVENTS = snapshot.STALE_EVENTS = 1  # every close here keeps one
        try:
            write_config(self.config_path, self.server.base_url)
            self.config = load_config(self.config_path, home=self.home)
            os.mkfifo(self.fifo)
            asyncio.run(self.make_donor())
            self.new_thread()
            started = time.monotonic()
            round_no = 0
            while self.counts.kills < self.kills:
                round_no += 1
                plan = self.plan(round_no)
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
            snapshot.MIN_EVENTS, snapshot.STALE_EVENTS = thresholds
            self.server.stop()
        if self.own_home and self.counts.clean:
            shutil.rmtree(self.home, ignore_errors=True)
        return self.counts


class Typist:
    """Types the round's lines: all at once into a pipe, or at a terminal like a user.

    Through a pipe the REPL takes one line after the previous one finished.
    At a terminal (a pty) lines come with random pauses, so prompts are typed
    while a reply streams; a `/compact` is typed once the thread is idle and
    the lines after it follow at once, so they queue while it runs. The
    terminal's output is drained (and its cursor-position queries answered),
    so the child never blocks on writing.
    """

    IDLE = (ev.kind_of(ev.TurnEnd), ev.kind_of(ev.CommandDone), ev.kind_of(ev.EndSeed))

    def __init__(
        self,
        child: subprocess.Popen[bytes],
        master: int | None,
        log_path: Path,
        rng: random.Random,
    ) -> None:
        self.child = child
        self.master = master
        self.log_path = log_path
        self.offset = log_path.stat().st_size
        self.gaps = [rng.uniform(0.0, 0.5) for _ in range(16)]
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def type(self, lines: list[str]) -> None:
        if self.master is None:
            assert self.child.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self.child.stdin.write("".join(line + "\n" for line in lines).encode())
                self.child.stdin.flush()
            return
        for target in (self._drain, lambda: self._type(lines)):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self.threads.append(thread)

    def _type(self, lines: list[str]) -> None:
        assert self.master is not None
        after_compact = False
        typed = 0
        for index, line in enumerate(lines):
            if line.startswith("/"):
                while not self.stop.is_set() and not self._idle(typed):
                    self.stop.wait(0.02)
            elif not after_compact:
                self.stop.wait(self.gaps[index % len(self.gaps)])
            after_compact = after_compact or line.startswith("/")
            if self.stop.is_set():
                return
            with contextlib.suppress(OSError):
                os.write(self.master, line.encode() + b"\r")
            typed += not line.startswith("/")

    def _idle(self, typed: int) -> bool:
        """Every prompt typed so far was accepted, this child's last logged event leaves
        the thread idle, and 20 ms later it still does."""
        with contextlib.suppress(OSError, ValueError), self.log_path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(min(self.offset, size))
            lines = fh.read().split(b"\n")
            kinds = [json.loads(line).get("kind") for line in lines[:-1]]
            if (
                kinds.count(ev.kind_of(ev.InboxQueued)) < typed
                or not kinds
                or kinds[-1] not in self.IDLE
            ):
                return False
            self.stop.wait(0.02)
            return os.fstat(fh.fileno()).st_size == size
        return False

    def _drain(self) -> None:
        assert self.master is not None
        while not self.stop.is_set():
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            if b"\x1b[6n" in data:
                with contextlib.suppress(OSError):
                    os.write(self.master, b"\x1b[1;1R")

    def close(self) -> None:
        self.stop.set()
        if self.master is None:
            with contextlib.suppress(OSError):
                assert self.child.stdin is not None
                self.child.stdin.close()
            return
        os.close(self.master)  # the child is dead: the drain's read ends with EIO
        for thread in self.threads:
            thread.join(timeout=5)


class LogWatcher:
    """Follows the child's log from an offset, one complete line at a time."""

    def __init__(self, path: Path, offset: int) -> None:
        self.fh = path.open("rb")
        self.offset = offset
        self.buffer = b""
        self.first_seen: float | None = None

    def deadline(self) -> bool:
        """Give up on a target 6 s after the child's first event (it never came)."""
        return self.first_seen is not None and time.monotonic() - self.first_seen > 6.0

    def poll(self, matches: Callable[[Event], bool]) -> bool:
        size = os.fstat(self.fh.fileno()).st_size
        if size < self.offset:  # a torn tail was cut off at start-up
            self.offset, self.buffer = size, b""
        if size == self.offset:
            return False
        if self.first_seen is None:
            self.first_seen = time.monotonic()
        self.fh.seek(self.offset)
        data = self.fh.read(size - self.offset)
        self.offset += len(data)
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            try:
                event = decode_line(line)
            except (ValueError, LogCorruptError):
                continue
            if matches(event):
                return True
        return False

    def close(self) -> None:
        self.fh.close()


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
