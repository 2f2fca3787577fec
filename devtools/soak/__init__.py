"""Soak: random SIGKILLs against `trove --plain`, then count what a user would find lost.

    python -m devtools.soak [--kills N] [--seed S] [--home DIR] [--verbose]

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

from devtools.soak.checks import (
    OLDER_SAMPLE,
    RECENT_ROUNDS,
    REPORTED,
    STEP_TIMEOUT,
    USER,
    Checks,
    delivered_facts,
    findable,
)
from devtools.soak.cli import main
from devtools.soak.counts import Counts
from devtools.soak.model import FILLER, WORDS, SoakModel, write_config
from devtools.soak.plan import FACT, FAULT_CHANCE, Plan, plan_round
from devtools.soak.run import DONOR, REPO, Soak
from devtools.soak.typist import LogWatcher, Typist
from engine.config import load_config

__all__ = [
    "DONOR",
    "FACT",
    "FAULT_CHANCE",
    "FILLER",
    "OLDER_SAMPLE",
    "RECENT_ROUNDS",
    "REPO",
    "REPORTED",
    "STEP_TIMEOUT",
    "USER",
    "WORDS",
    "Checks",
    "Counts",
    "LogWatcher",
    "Plan",
    "Soak",
    "SoakModel",
    "Typist",
    "delivered_facts",
    "findable",
    "load_config",
    "main",
    "plan_round",
    "write_config",
]
