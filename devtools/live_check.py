#!/usr/bin/env python3
"""Manual live check of task continuity against a real OpenAI-compatible endpoint.

    python -m devtools.live_check --endpoints PRIVATE.json --output RESULT.json
        [--home DIR] [--timeout SECONDS]

The tests prove the mechanics against a scripted model; only a real model shows
they are usable: that a model whose context lost exact details searches the
archive, reads the source, cites it in a note and answers right. Through the
engine's own Runtime (over a temporary home unless `--home`), it:

1. plants random exact codes in a few turns (devtools/live_codes.py);
2. compacts them all away with `/compact`, the summarizer told to leave the codes
   out, and checks the summary did: one that kept them would prove nothing;
3. resumes on a new runtime, so the agent is rebuilt from the log alone;
4. asks for the codes back as a JSON manifest; that turn must hold a successful
   history_search, a history_read of a planted source, a task_note whose citation
   `trove notes` reports available, and an answer listing exactly the codes.

The record of every check, the codes, the summary and the final log goes to
`--output`; one line per check and PASS or FAIL to stdout. Exit status: 0
passed, 1 failed, 2 bad usage. The endpoints file holds a credential
(devtools/live_endpoint.py). One model on one day: not an acceptance rate or
a quality benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

from devtools.live_codes import (
    OMIT_CODES_LINE,
    OmitCodesSummarizer,
    Plant,
    leaked_codes,
    make_plants,
    parse_manifest,
    recovery_prompt,
)
from devtools.live_endpoint import (
    Endpoint,
    UsageError,
    build_config,
    isolate_key,
    load_endpoint,
    without_tools,
)
from devtools.live_report import Report, StopCheck, TurnLog, run_turn
from engine import events as ev
from engine.config import Config
from engine.errors import TroveError
from engine.events import to_dict
from engine.log import read_events
from engine.runtime import Runtime
from engine.threads.paths import LOG_NAME
from engine.util.safe_text import safe_text
from engine.workspace.reports import cli_notes

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

# --------------------------------------------------------------------------- the run


async def plant(runtime: Runtime, plants: list[Plant], report: Report, timeout: float) -> None:
    for index, item in enumerate(plants, 1):
        turn = await run_turn(runtime, item.message, timeout)
        if turn.status != "ok":
            report.check("planted", False, f"turn {index}: {turn.status}")
            raise StopCheck
        report.planted_replies.append(turn.final_text or "")
    report.check("planted", True, f"{len(plants)} turns")


async def compact(runtime: Runtime, report: Report) -> None:
    """Force the compaction through /compact with the omit-codes summarizer in place."""
    summarizer = OmitCodesSummarizer(runtime.model, OMIT_CODES_LINE)
    runtime.compaction.model = summarizer
    before = len(runtime.thread.log.events)
    try:
        result = await runtime.commands.run("/compact")
    finally:
        runtime.compaction.model = runtime.model
    events = runtime.thread.log.events[before:]
    summaries = [e for e in events if isinstance(e, ev.CompactSummary)]
    ends = [e for e in events if isinstance(e, ev.CompactEnd)]
    archive = ends[-1].archive if ends and isinstance(ends[-1].archive, dict) else {}
    if not result.ok or not summaries:
        report.check("compacted", False, result.text)
        raise StopCheck
    report.summary = summaries[-1].summary
    replaced = len(summaries[-1].replaced or ())
    ok = (
        summarizer.calls == 1
        and isinstance(archive.get("batch"), int)
        and replaced >= len(report.codes)
    )
    report.check("compacted", ok, f"{result.text} summarizer calls: {summarizer.calls}")
    leaked = leaked_codes(report.summary, report.codes)
    report.check(
        "summary_omits_codes",
        not leaked,
        f"the summary contains {', '.join(leaked)}" if leaked else "",
    )
    if not ok:
        raise StopCheck


async def resume(runtime: Runtime, report: Report) -> None:
    """The rebuilt agent: an end-seed at the seam, and no code anywhere in its context."""
    log = runtime.thread.log
    seeded = runtime.thread.resumed and isinstance(log.events[-1], ev.EndSeed)
    entries = runtime.driver.surface.entries
    report.check(
        "resumed",
        seeded and bool(entries) and entries[0].checkpoint,
        f"end-seed at seq {log.events[-1].seq}" if seeded else "no end-seed at the seam",
    )
    request = await runtime.driver.request_messages()
    leaked = leaked_codes(json.dumps(request, ensure_ascii=False), report.codes)
    report.check(
        "context_hides_codes",
        not leaked,
        f"the rebuilt request contains {', '.join(leaked)}" if leaked else "",
    )


def evaluate_recovery(turn: TurnLog, notes: dict[str, Any], report: Report) -> None:
    """The four recovery checks, from the turn's log and `trove notes`' report."""
    codes = report.codes
    searches = [r for r in turn.tool_results("history_search") if r.get("status") != "error"]
    hits = sum(len(r.get("results") or ()) for r in searches)
    report.check(
        "history_search",
        bool(searches) and hits > 0,
        f"{len(searches)} successful searches, {hits} results",
    )
    reads = [r for r in turn.tool_results("history_read") if isinstance(r.get("text"), str)]
    read_codes = sorted({c for r in reads for c in codes if c in r["text"]})
    report.check(
        "history_read",
        bool(read_codes),
        f"{len(reads)} successful reads holding {len(read_codes)} of {len(codes)} codes",
    )
    written = [r for r in turn.tool_results("task_note") if r.get("status") == "ok"]
    available = [
        citation["id"]
        for note in notes.get("notes") or ()
        for citation in note.get("citations") or ()
        if citation.get("status") == "available"
    ]
    report.check(
        "cited_note",
        bool(written) and bool(available),
        f"{len(written)} notes written; available citations: {', '.join(available) or 'none'}",
    )
    report.answer = turn.final_text
    manifest = parse_manifest(turn.final_text or "")
    if turn.status != "ok" or manifest is None:
        why = turn.status if turn.status != "ok" else "no JSON manifest in the final answer"
        report.check("manifest", False, why)
        return
    exact = sorted(manifest) == sorted(codes)
    report.check("manifest", exact, "" if exact else f"got {manifest}, planted {codes}")


async def run_check(
    config: Config, home: Path, plants: list[Plant], report: Report, timeout: float
) -> None:
    """The four stages; a stage that leaves nothing to test stops the run early."""
    with report.timed("plant_and_compact"):
        runtime = Runtime.open(without_tools(config), home)
        report.thread_id = runtime.thread.id
        try:
            with report.timed("plant"):
                await plant(runtime, plants, report, timeout)
            with report.timed("compact"):
                await compact(runtime, report)
        finally:
            await runtime.aclose()
    with report.timed("resume_and_recover"):
        runtime = Runtime.open(config, home, thread_id=report.thread_id)
        try:
            await resume(runtime, report)
            with report.timed("recover"):
                turn = await run_turn(runtime, recovery_prompt(len(plants)), timeout)
        finally:
            await runtime.aclose()
    report.notes = cli_notes(home, config.user_id, report.thread_id)
    evaluate_recovery(turn, report.notes, report)


def output_record(report: Report, endpoint: Endpoint, home: Path | None) -> dict[str, Any]:
    return {
        "passed": report.passed,
        "checks": report.checks,
        "details": report.details,
        "error": report.error,
        "codes": report.codes,
        "summary": report.summary,
        "summary_instruction": OMIT_CODES_LINE,
        "planted_replies": report.planted_replies,
        "answer": report.answer,
        "notes": report.notes,
        "thread_id": report.thread_id,
        "home": str(home) if home is not None else None,
        "transcript": [to_dict(event) for event in report.transcript],
        "model": endpoint.model,
        "base_url": endpoint.public_url,
        "timings": report.timings,
    }


def write_output(path: Path, record: dict[str, Any], endpoint: Endpoint) -> None:
    text = json.dumps(record, ensure_ascii=False, indent=2)
    if endpoint.api_key:
        # Belt and braces: nothing should carry the key, but a server that echoes
        # it in an error message would put it in the transcript.
        text = text.replace(endpoint.api_key, "[redacted]")
    path.write_text(text + "\n", encoding="utf-8")


async def run(endpoint: Endpoint, config: Config, home: Path, timeout: float) -> Report:
    plants = make_plants(random.SystemRandom())
    report = Report(codes=[p.code for p in plants])
    with report.timed("total"):
        try:
            await run_check(config, home, plants, report, timeout)
        except StopCheck:
            pass
        except Exception as exc:  # the record is written whatever went wrong
            report.error = f"{type(exc).__name__}: {exc}"
    if report.thread_id is not None:
        log_path = home / "users" / config.user_id / "threads" / report.thread_id / LOG_NAME
        if log_path.is_file():
            report.transcript = read_events(log_path).events
    return report


# --------------------------------------------------------------------------- command line


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line and exit 2, like every other usage error."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = _Parser(
        prog="live_continuity_check.py",
        description="Check task continuity against a real OpenAI-compatible endpoint.",
    )
    parser.add_argument("--endpoints", type=Path, required=True, help="private JSON file")
    parser.add_argument("--output", type=Path, required=True, help="where to write the record")
    parser.add_argument("--home", type=Path, help="Trove home to use (default: a temp dir)")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds allowed per turn (default 300)"
    )
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        raise UsageError(f"{parser.prog}: --timeout must be positive")
    if not args.output.parent.is_dir():
        raise UsageError(f"{parser.prog}: output directory {args.output.parent} does not exist")
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        endpoint = load_endpoint(args.endpoints)
        config = build_config(endpoint, str(args.endpoints))
        isolate_key(endpoint)
    except TroveError as exc:  # a UsageError or a ConfigError
        print(safe_text(" ".join(str(exc).splitlines())), file=sys.stderr)
        return EXIT_USAGE
    with contextlib.ExitStack() as stack:
        if args.home is None:
            home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="trove-live-")))
        else:
            home = args.home
            home.mkdir(parents=True, exist_ok=True)
        report = asyncio.run(run(endpoint, config, home, args.timeout))
        try:
            write_output(args.output, output_record(report, endpoint, args.home), endpoint)
        except OSError as exc:
            print(f"cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_FAIL
    for name, ok in report.checks.items():
        detail = report.details.get(name)
        print(safe_text(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else "")))
    if report.error is not None:
        print(safe_text(f"error: {report.error}"))
    print("PASS" if report.passed else "FAIL")
    return EXIT_PASS if report.passed else EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
