"""The soak itself: rounds that each spawn a child, type its plan, do its faults and
kill it, then check the thread; `Soak.run` runs them all and returns the counts."""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import pty
import random
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path

from devtools.file_damage import CREATING, DAMAGES, NAMES, SIDECARS, damage_file, keep_drawn
from devtools.scripted_server import ScriptedServer
from devtools.soak.checks import STEP_TIMEOUT, USER, Checks
from devtools.soak.counts import Counts
from devtools.soak.model import SoakModel, write_config
from devtools.soak.plan import Plan, plan_round
from devtools.soak.typist import LogWatcher, Typist
from engine import events as ev
from engine.config import Config, load_config
from engine.continuity.search.view import HistoryView
from engine.events import LogEvent as Event
from engine.log import snapshot
from engine.runtime import Runtime
from engine.threads.lock import LOCK_NAME, ThreadLock, ThreadLockedError
from engine.threads.paths import LOG_NAME, thread_dir
from engine.threads.thread import Thread
from engine.workspace.summary import summarize

REPO = Path(__file__).resolve().parents[2]
DONOR = "soak-donor"
"""The thread whose caches are "another thread's copy"."""


class Soak:
    """One soak run over a home: `run` it; the tests drive its steps one by one."""

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
        self.checks = Checks(self.home, self.counts, self.rng, self.note)
        self.planted: dict[str, int] = {}
        """Fact → the round that typed it."""
        self.thread_id = ""
        self.config_path = self.home / "soak-config.yaml"
        self.config: Config | None = None
        self.stderr_path = self.home / "child-stderr.txt"
        self.recover_next = ""
        """Why the next kill aims at start-up recovery ('' when it does not)."""
        self.generation = 0
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

    # -- checks (devtools/soak/checks.py) -----------------------------------------------

    def check_facts(self, view: HistoryView, facts: list[str], after_recovery: bool) -> list[str]:
        return self.checks.check_facts(view, facts, after_recovery)

    def check_input(self, events: list[Event], inbox: set[int]) -> None:
        self.checks.check_input(events, inbox)

    def check_readonly(self, round_no: int) -> tuple[list[str], bool]:
        """Step 1; returns the facts missing (reported) and whether the load failed."""
        assert self.config is not None
        missing, why = self.checks.readonly(self.config, self.thread_id, self.planted, round_no)
        if why is not None:
            self.broken(why)
            return [], True
        return missing, False

    async def reopen(self, round_no: int, every: bool, pending: list[str]) -> None:
        """Step 2: open as a user would, check input and facts, then that it still works."""
        assert self.config is not None
        self.model.paced = False
        why = await self.checks.reopen(
            self.config, self.thread_id, self.planted, round_no, every, pending
        )
        if why is not None:
            self.broken(why)

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
            snapshot.MIN_EVENTS, snapshot.STALE_EVENTS = thresholds
            self.server.stop()
        if self.own_home and self.counts.clean:
            shutil.rmtree(self.home, ignore_errors=True)
        return self.counts
