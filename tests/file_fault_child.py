"""The processes of the file-fault family (tests/test_file_faults.py).

    python -m tests.file_fault_child build CONFIG ROOT
    python -m tests.file_fault_child hold CONFIG CASES
    python -m tests.file_fault_child open CONFIG CASES

`build` makes the fixture threads once, in ROOT's home: `fix` (the thread every
case damages a copy of) and `other` (where "another thread's copy" comes
from), each with a few exchanges, one compaction (so the archive and its terms
file exist), a prompt queued at quit, a draft, a replay snapshot (the length
threshold lowered here, so even this short log gets one), a resume index, the drawn
lines and the summary cache.

CASES is a JSON list of {"name", "home", "tag"}: one copy of `fix` per home.
`hold` is the writer of every case it is given, at once: it opens them all (their
archives too), says `held`, and after a line on stdin goes on in each as a
user would (a prompt answered, /compact, a prompt left queued, a draft, the
drawn lines at quit) and closes it. `open` opens each case as a user would
come back to it: the readers first (`trove threads`, `history search --all`
and `history search`), then the app's open (a writer), then a prompt and
/compact, then a reopen, then (read-only) each fact again; it times the open
and measures the peak RSS of the case. Both print one JSON object per case on
stdout; any exception is in it, never on stderr. A case that hangs dumps every
thread's stack and ends the process, so the hang names itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import json
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from devtools.file_damage import keep_drawn
from engine import events as ev
from engine.config import Config, load_config
from engine.continuity.search.view import HistoryView
from engine.log import read_events, snapshot
from engine.runtime import Runtime
from engine.threads.draft import current_draft, keep_draft
from engine.threads.paths import LOG_NAME, thread_dir
from engine.threads.thread import Thread
from engine.workspace.reports import cli_search, thread_snapshot
from engine.workspace.search_all import search_all
from engine.workspace.summary import summarize

USER = "local"
THREAD = "fix"
OTHER = "other"
COMPACTED = ("FACT-A1", "FACT-A2")
"""Facts the fixture's compaction took out of the context (in the archive)."""
ACTIVE = "FACT-A3"
QUEUED = "queued at quit FACT-Q1"
DRAFT = "draft at quit FACT-D1"
TYPED = (
    "remember code FACT-A1 for the launch",
    "remember code FACT-A2 for the review",
    "remember code FACT-A3 for the audit",
)
OTHER_TYPED = tuple(text.replace("FACT-A", "FACT-O") for text in TYPED)
OTHER_QUEUED = "queued at quit FACT-P1"
OTHER_DRAFT = "draft at quit FACT-E1"
CASE_LIMIT = 30.0
"""Seconds one case may take in a child before it is taken for a hang (stacks dumped)."""
STEP_LIMIT = 10.0


def _low_snapshot_threshold() -> None:
    """Every close writes a replay snapshot, so each case reads, and overwrites, one."""
    snapshot.MIN_EVENTS = 1
    snapshot.STALE_EVENTS = 1


def typed_after(tag: str) -> str:
    return f"typed after the damage FACT-{tag}"


def queued_after(tag: str) -> str:
    return f"queued at quit after the damage FACT-{tag}Q"


def draft_after(tag: str) -> str:
    return f"draft after the damage FACT-{tag}D"


def findable(view: HistoryView, fact: str) -> bool:
    """Word for word, as the model finds it: a search, then a read of the source."""
    for item in view.search(fact).get("results", []):
        if fact in item.get("excerpt", "") or fact in str(view.read(item["id"]).get("text", "")):
            return True
    return False


async def _turn(rt: Runtime, text: str, *, waking: bool = True) -> None:
    rt.driver.send(text, waking=waking)
    if waking:
        await asyncio.wait_for(rt.driver.when_idle(), STEP_LIMIT)


# -- build ---------------------------------------------------------------------------------


async def _build_thread(
    config: Config, home: Path, thread_id: str, typed: tuple[str, ...], queued: str, draft: str
) -> None:
    Thread.create(home, USER, thread_id).close()
    rt = Runtime.open(config, home, thread_id=thread_id)
    try:
        for text in typed[:2]:
            await _turn(rt, text)
        await _compact(rt)
        await _turn(rt, typed[2])
        await _turn(rt, queued, waking=False)
        await _draft(rt, draft)
        await asyncio.to_thread(keep_drawn, rt)
    finally:
        await rt.aclose()
    summarize(home, USER, thread_id)  # `trove threads` caches what it read


async def build(config_path: Path, root: Path) -> None:
    home = root / "template"
    config = load_config(config_path, home=home)
    await _build_thread(config, home, THREAD, TYPED, QUEUED, DRAFT)
    await _build_thread(config, home, OTHER, OTHER_TYPED, OTHER_QUEUED, OTHER_DRAFT)
    print(json.dumps({"home": str(home)}), flush=True)


# -- hold ----------------------------------------------------------------------------------


async def hold(config_path: Path, cases: list[dict[str, str]]) -> None:
    held: dict[str, Runtime] = {}
    for case in cases:
        home = Path(case["home"])
        rt = Runtime.open(load_config(config_path, home=home), home, thread_id=THREAD)
        assert rt.continuity is not None
        rt.continuity.snapshot().view().search("FACT")  # the archive open, as the tools keep it
        held[case["name"]] = rt
    print("held", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    for case in cases:
        faulthandler.dump_traceback_later(CASE_LIMIT, exit=True)
        out: dict[str, Any] = {"case": case["name"], "errors": []}
        rt = held[case["name"]]
        tag = case["tag"]
        steps = (
            ("prompt", lambda rt=rt, tag=tag: _turn(rt, typed_after(tag))),
            ("compact", lambda rt=rt: _compact(rt)),
            ("queue", lambda rt=rt, tag=tag: _turn(rt, queued_after(tag), waking=False)),
            ("draft", lambda rt=rt, tag=tag: _draft(rt, draft_after(tag))),
            ("drawn", lambda rt=rt: asyncio.to_thread(keep_drawn, rt)),
        )
        for step, run in steps:
            try:
                await run()
            except Exception:  # noqa: BLE001 - reported per case, on stdout
                out["errors"].append(f"{step}: {traceback.format_exc()}")
        out["inbox"] = [item.text for item in rt.driver.inbox]
        try:
            await rt.aclose()
        except Exception:  # noqa: BLE001
            out["errors"].append(f"close: {traceback.format_exc()}")
        faulthandler.cancel_dump_traceback_later()
        print(json.dumps(out), flush=True)


async def _compact(rt: Runtime) -> None:
    result = await asyncio.wait_for(rt.commands.run("/compact"), STEP_LIMIT)
    if not result.ok:
        raise RuntimeError(f"/compact failed: {result.text}")


async def _draft(rt: Runtime, text: str) -> None:
    if not keep_draft(rt.thread.log, text):
        raise RuntimeError("the draft could not be kept")


# -- open ----------------------------------------------------------------------------------


def _reset_peak() -> None:
    """Start the process's peak RSS (VmHWM) afresh, so it is measured per case (where the
    kernel cannot, the peak of the whole process so far stands for each case: a bound)."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _peak_kib() -> int:
    """The peak RSS since `_reset_peak` (KiB)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def open_case(config_path: Path, case: dict[str, str]) -> dict[str, Any]:
    from tui.startup.opening import Opening

    home = Path(case["home"])
    config = load_config(config_path, home=home)
    out: dict[str, Any] = {"case": case["name"]}
    start = time.perf_counter()
    # The readers, before anything reopens it: `trove threads`, `--all`, `history search`.
    try:
        summary = summarize(home, USER, THREAD)
        out["listed"] = {"problem": summary.problem, "messages": summary.messages}
    except Exception as exc:  # noqa: BLE001 - ThreadNotFoundError / OSError: a clean report
        out["listed"] = {"error": f"{type(exc).__name__}: {exc}"}
    everywhere = search_all(home, USER, COMPACTED[0])
    out["search_all"] = {"problems": everywhere.get("problems", [])}
    try:
        out["search"] = cli_search(home, USER, THREAD, COMPACTED[0])["status"]
    except Exception as exc:  # noqa: BLE001
        out["search"] = f"{type(exc).__name__}: {exc}"
    out["readers_s"] = time.perf_counter() - start

    start = time.perf_counter()
    opening = Opening(config, home, THREAD)
    opening.claim()
    try:
        thread = await opening.thread()
    except Exception as exc:  # noqa: BLE001 - e.g. no such thread: said in one line
        out["open_s"] = time.perf_counter() - start
        out["not_opened"] = f"{type(exc).__name__}: {exc}"
        return out
    rt = Runtime.assemble(config, home, thread, surface=opening.surface(thread))
    out["open_s"] = time.perf_counter() - start
    try:
        log = rt.thread.log
        out["read_only"] = rt.thread.read_only
        out["notices"] = list(rt.notices)
        out["inbox"] = [item.text for item in rt.driver.inbox]
        out["draft"] = current_draft(log)[:200]
        out["kept"] = len(opening.kept)
        assert rt.continuity is not None
        view = await asyncio.to_thread(rt.continuity.snapshot().view)
        out["status"] = view.status
        facts = [*COMPACTED, ACTIVE, f"FACT-{case['tag']}"]
        delivered = [
            fact
            for fact in facts
            if any(isinstance(e, ev.UserMessage) and fact in e.text for e in log.events)
        ]
        out["facts"] = {fact: await asyncio.to_thread(findable, view, fact) for fact in delivered}
        # Still a working thread: a prompt is answered, /compact succeeds.
        await _turn(rt, f"check after reopening {case['tag']}")
        ends = [e for e in log.events if isinstance(e, ev.TurnEnd)]
        out["turn"] = ends[-1].status if ends else None
        out["compact"] = (await asyncio.wait_for(rt.commands.run("/compact"), STEP_LIMIT)).ok
    finally:
        await rt.aclose()
    again = read_events(thread_dir(home, USER, THREAD) / LOG_NAME)
    out["reopened"] = {"damage": str(again.damage or ""), "torn": again.torn or ""}
    out["checked"] = [*delivered, f"check after reopening {case['tag']}"]
    return out


def read_after(case: dict[str, str], facts: list[str]) -> dict[str, list[Any]]:
    """After the reopened thread's own compaction, as `trove history search` reads it:
    each fact -> [found word for word, the status]."""
    after = thread_snapshot(Path(case["home"]), USER, THREAD)
    try:
        view = after.view()
        return {fact: [findable(view, fact), view.status] for fact in facts}
    finally:
        if after.store is not None:
            after.store.close()


async def open_all(config_path: Path, cases: list[dict[str, str]]) -> None:
    for case in cases:
        faulthandler.dump_traceback_later(CASE_LIMIT, exit=True)
        _reset_peak()
        try:
            out = await open_case(config_path, case)
            if "checked" in out:  # what opened it is closed and gone by now
                out["after"] = read_after(case, out.pop("checked"))
        except Exception:  # noqa: BLE001 - reported per case, on stdout
            out = {"case": case["name"], "error": traceback.format_exc()}
        faulthandler.cancel_dump_traceback_later()
        out["peak_kib"] = _peak_kib()
        print(json.dumps(out), flush=True)


def main(argv: list[str]) -> None:
    mode, config_path, where = argv[0], Path(argv[1]), Path(argv[2])
    _low_snapshot_threshold()
    faulthandler.enable()
    if mode == "build":
        asyncio.run(build(config_path, where))
        return
    cases = json.loads(where.read_text())
    asyncio.run((hold if mode == "hold" else open_all)(config_path, cases))


if __name__ == "__main__":
    main(sys.argv[1:])
