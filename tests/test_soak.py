"""devtools/soak/: a short run reads all zeros, and its checks do see a loss."""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import subprocess
import sys

from devtools import soak
from engine import events as ev
from engine.continuity.archive.store import archive_path
from engine.runtime import Runtime
from tests.cli_support import REPO, _clean_env

LINE = re.compile(
    r"kills=(\d+) lost_input=(\d+) lost_facts=(\d+) unreported=(\d+) wedged=(\d+) unloadable=(\d+)"
)


def test_a_short_soak_prints_one_line_of_zeros():
    run = subprocess.run(
        [sys.executable, "-m", "devtools.soak", "--kills", "4", "--seed", "20261130"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_clean_env(),
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("\n") == 1, run.stdout
    found = LINE.fullmatch(run.stdout.strip())
    assert found is not None, run.stdout
    kills, *rest = (int(n) for n in found.groups())
    assert kills == 4
    assert rest == [0, 0, 0, 0, 0], run.stderr


async def test_the_checks_count_a_fact_gone_from_the_archive(tmp_path):
    """Tamper with the archive behind the log's back: the fact is lost and, with the
    status still `available`, unreported. Then an accepted prompt nobody holds is lost."""
    sk = soak.Soak(argparse.Namespace(kills=1, seed=1, home=tmp_path, verbose=False))
    sk.server.start()
    try:
        soak.write_config(sk.config_path, sk.server.base_url)
        sk.config = soak.load_config(sk.config_path, home=sk.home)
        sk.new_thread()
        sk.model.paced = False
        fact = "FACT-0001-0-0123abcd"
        sk.planted[fact] = 1
        rt = Runtime.open(sk.config, sk.home, thread_id=sk.thread_id)
        for text in (f"remember code {fact} please", "and another message", "a third one"):
            rt.driver.send(text)
            await rt.driver.when_idle()
        assert (await rt.commands.run("/compact")).ok
        view = rt.continuity.snapshot().view()
        assert view.status == "available"
        assert soak.findable(view, fact)
        with sqlite3.connect(archive_path(sk.thread_dir)) as db:
            db.execute("UPDATE sources SET text = 'overwritten'")
        view = rt.continuity.snapshot().view()
        assert sk.check_facts(view, [fact], after_recovery=True) == [fact]
        assert sk.counts.lost_facts == {fact}
        assert sk.counts.unreported == {fact}

        queued = rt.thread.log.append(ev.InboxQueued(text="typed", waking=False))
        sk.check_input(rt.thread.log.events, inbox=set())
        assert sk.counts.lost_input == {queued.seq}
        assert not sk.counts.clean
        await rt.aclose()
    finally:
        sk.server.stop()


async def test_the_faults_under_a_live_child_are_done_and_counted(tmp_path):
    """Between kills the soak deletes the lock file under the live writer (and finds that
    no second writer gets in) and damages the caches beside the log; the thread still
    opens, and the counts stay clean."""
    sk = soak.Soak(argparse.Namespace(kills=1, seed=5, home=tmp_path, verbose=False))
    sk.server.start()
    try:
        soak.write_config(sk.config_path, sk.server.base_url)
        sk.config = soak.load_config(sk.config_path, home=sk.home)
        os.mkfifo(sk.fifo)
        await sk.make_donor()
        sk.new_thread()
        writer = Runtime.open(sk.config, sk.home, thread_id=sk.thread_id)  # the live child
        writer.driver.send("remember code FACT-0001-0-0123abcd please")
        await writer.driver.when_idle()
        assert (await writer.commands.run("/compact")).ok
        sk.fault("lock")
        assert (sk.counts.locks_deleted, sk.counts.second_writers) == (1, 0)
        for _ in range(6):
            sk.fault("sidecar")
        assert sum(sk.counts.sidecars_damaged.values()) == 6, sk.counts.sidecars_damaged
        await writer.aclose()
        assert sk.check_readonly(1) == ([], False)
        await sk.reopen(1, every=True, pending=[])
        assert sk.counts.clean, sk.counts.notes
    finally:
        sk.server.stop()


def test_a_log_that_does_not_load_whole_is_unloadable_and_kept_aside(tmp_path):
    """A bad line in the log: step 1 counts the thread unloadable, keeps a copy of it
    and goes on with a new thread, which then checks clean."""
    sk = soak.Soak(argparse.Namespace(kills=1, seed=3, home=tmp_path, verbose=False))
    soak.write_config(sk.config_path, "http://127.0.0.1:9/v1")
    sk.config = soak.load_config(sk.config_path, home=sk.home)
    sk.new_thread()
    damaged = sk.thread_id
    with sk.log_path.open("ab") as fh:
        fh.write(b"{not json\n")
    assert sk.check_readonly(1) == ([], True)
    assert sk.counts.unloadable == 1
    assert (tmp_path / f"unloadable-{damaged}").is_dir()
    assert sk.thread_id != damaged
    assert sk.check_readonly(2) == ([], False)
    assert sk.counts.unloadable == 1, sk.counts.notes
