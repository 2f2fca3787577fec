#!/usr/bin/env python3
"""Manual live check of task continuity against a real OpenAI-compatible endpoint.

    python devtools/live_check.py --endpoints PRIVATE.json --output RESULT.json
        [--home DIR] [--timeout SECONDS]

The unit and end-to-end tests prove the mechanics against a scripted model;
only a real model can show that the mechanics are usable: that a model whose
context lost some exact details will actually search the archive, read the
source, cite it in a note and answer correctly. This script drives Trove's own
engine (`engine.runtime.Runtime`, the same assembly every front end uses, over
a temporary home unless `--home` is given) through that scenario:

1. plant: a few turns whose user messages hold random exact codes (a batch
   code, a Latin code word, a Chinese phrase); the model's replies are kept;
2. compact: the normal `/compact` command with `compaction.keep_recent_tokens`
   0, so every planted message leaves the context. The summarizer gets the
   engine's own summary request with one extra system line telling it to leave
   the codes out (see `OmitCodesSummarizer`), and the stored summary is
   checked not to contain them: a summary that kept them would let the model
   answer without the archive, and the check would prove nothing;
3. resume: the runtime is closed and a new one opened on the same thread id,
   so the agent is rebuilt from the log alone (the resume writes an end-seed);
4. recover: the model is asked for the codes as a JSON manifest. That turn's
   log must hold a successful history_search, a history_read of a source with
   a planted code, a task_note whose citation `trove notes` reports as
   available, and a final answer whose JSON manifest lists exactly the codes.

The result (every check, the codes, the summary, the whole final thread log
as plain dicts, the model, the base URL and timings) is written to
`--output`; one line per check and then PASS or FAIL go to stdout. Exit
status: 0 passed, 1 failed, 2 bad usage (one line on stderr).

The endpoints file is JSON: {"base_url": "https://...", "model": "...",
"api_key": "..."} (api_key optional). It holds a credential, so it must NEVER
be committed: keep it outside the repository. The script refuses to run when
the file is tracked by git, and the key is never written to the output (the
base URL is written without user info or query, where keys also hide).

This verifies controlled recovery mechanics with one model on one day. It is
not an acceptance rate, a deployment check or a quality benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlsplit, urlunsplit

from msgspec.structs import replace

from engine import events as ev
from engine.compaction.prompt import SUMMARY_INSTRUCTIONS
from engine.config import Config, parse_config
from engine.errors import TroveError
from engine.events import LogEvent, to_dict
from engine.log import read_events
from engine.model import Completion, ModelClient, ModelError
from engine.runtime import Runtime
from engine.threads.paths import LOG_NAME
from engine.util.safe_text import safe_text
from engine.workspace.reports import cli_notes

E = TypeVar("E", bound=LogEvent)

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

OMIT_CODES_LINE = (
    "Additional instruction for this summary: do not include any batch codes, code words, "
    "pass phrases or other identifiers verbatim, in any language or script. Say only that "
    "the user gave codes that must be recovered from the archive."
)

CHECKS = (
    "planted",
    "compacted",
    "summary_omits_codes",
    "resumed",
    "context_hides_codes",
    "history_search",
    "history_read",
    "cited_note",
    "manifest",
)

_LATIN_WORDS = (
    "AQUILA", "FORTIS", "LUMEN", "NOVUS", "SILVA", "TERRA", "VENTUS", "IGNIS", "FLUMEN",
    "SEPTEM", "NOCTIS", "AURUM", "FERRUM", "CAELUM", "MARIS", "VERITAS",
)  # fmt: skip
# Common characters only, so every tokenizer and font on the way handles them.
_CHINESE_CHARS = "青松明月照流泉白云山水春秋风雨龙凤花鸟金石江河湖海星辰雪竹梅兰"


class UsageError(TroveError):
    """A problem with the command line or the endpoints file: one line, exit 2."""


# --------------------------------------------------------------------------- endpoints


@dataclass(frozen=True)
class Endpoint:
    """Where to send requests; the key stays out of repr so no log line leaks it."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)

    @property
    def public_url(self) -> str:
        """The base URL as written to the output: no user info, query or fragment."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = host + (f":{parts.port}" if parts.port is not None else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


_ENDPOINT_KEYS = ("base_url", "model", "api_key")


def _tracked_by_git(path: Path) -> str | None:
    """The work tree that tracks `path`, or None (untracked, no repository, no git)."""
    cwd = path.parent
    try:
        tracked = subprocess.run(
            ["git", "ls-files", "--error-unmatch", "--", path.name],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
        if tracked.returncode != 0:
            return None
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return top.stdout.strip() or str(cwd)


def load_endpoint(path: Path) -> Endpoint:
    """Read and validate the endpoints file; every problem is one UsageError line.

    Unknown keys are refused rather than ignored, so a misspelt "apikey" is
    not silently sent as no key at all.
    """
    where = f"endpoints file {path}"
    if not path.is_file():
        raise UsageError(f"{where}: no such file")
    work_tree = _tracked_by_git(path.resolve())
    if work_tree is not None:
        raise UsageError(
            f"{where}: tracked by git in {work_tree}; it holds a credential and must never "
            "be committed (untrack it and keep it outside the work tree)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{where}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{where}: not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{where}: expected a JSON object with base_url, model, api_key")
    unknown = sorted(str(key) for key in data if key not in _ENDPOINT_KEYS)
    if unknown:
        raise UsageError(
            f"{where}: unknown key {unknown[0]!r} (expected base_url, model, optional api_key)"
        )
    base_url = data.get("base_url")
    parts = urlsplit(base_url) if isinstance(base_url, str) else None
    try:
        port_ok = parts is not None and (parts.port is None or parts.port > 0)
    except ValueError:
        port_ok = False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise UsageError(f"{where}: 'base_url' must be an http:// or https:// URL")
    model = data.get("model")
    if not isinstance(model, str) or not model.strip():
        raise UsageError(f"{where}: 'model' must be a non-empty string")
    api_key = data.get("api_key")
    if api_key is not None and (not isinstance(api_key, str) or not api_key):
        raise UsageError(f"{where}: 'api_key' must be a non-empty string or null")
    return Endpoint(base_url, model, api_key)


def build_config(endpoint: Endpoint, source: str) -> Config:
    """Trove's config for the check, validated by the engine's own parser.

    The provider is pinned to "openai" so an installed offline model can never
    stand in for the endpoint. keep_recent_tokens 0 makes /compact take every
    planted message; automatic compaction is off so no unplanned summary
    (without the omit instruction) can run mid-check. The environment is not
    consulted: the endpoints file alone says where requests go (see
    `isolate_key` for the key).
    """
    return parse_config(
        {
            "model": {
                "provider": "openai",
                "base_url": endpoint.base_url,
                "api_key": endpoint.api_key,
                "name": endpoint.model,
                "tools": "on",
            },
            "compaction": {"auto": False, "keep_recent_tokens": 0},
            "task_continuity": {"enabled": True},
        },
        source=source,
        env={},
    )


def isolate_key(endpoint: Endpoint) -> None:
    """Without an api_key in the file, make sure no key from the environment is sent.

    The model client falls back to $OPENAI_API_KEY, which belongs to some
    other endpoint; sending it to the one under test would leak it.
    """
    if endpoint.api_key is None:
        os.environ.pop("OPENAI_API_KEY", None)


def without_tools(config: Config) -> Config:
    """The planting config: no tools, so the model cannot copy the codes into notes.

    Notes survive compaction and ride along in every request; a code saved
    as a note while planting would hand the rebuilt agent its answer.
    """
    return replace(config, model=replace(config.model, tools="off"))


# --------------------------------------------------------------------------- codes


@dataclass(frozen=True)
class Plant:
    """One planted code and the user message that carries it."""

    code: str
    message: str


def make_plants(rng: random.Random) -> list[Plant]:
    """Fresh random codes each run, so no model can know them from training or a cache.

    Each message names its kind with plain keywords ("batch code", "Latin code
    word", "中文口令") that a lexical search can find, and sets the code in
    backticks so where it starts and ends is unambiguous.
    """
    alphabet = string.ascii_uppercase + string.digits
    batch = "BATCH-{}-{:02d}".format("".join(rng.choices(alphabet, k=4)), rng.randrange(100))
    latin = "{}-{}-{:02d}".format(*rng.sample(_LATIN_WORDS, 2), rng.randrange(100))
    chinese = "".join(rng.sample(_CHINESE_CHARS, 6))
    ack = "Please acknowledge briefly."
    return [
        Plant(batch, f"Batch code for tonight's shipment: `{batch}`. {ack}"),
        Plant(latin, f"Latin code word for the vault: `{latin}`. {ack}"),
        Plant(chinese, f"Chinese code phrase (中文口令): `{chinese}`. {ack}"),
    ]


def recovery_prompt(count: int) -> str:
    """The question after the rebuild: says which tools to use, never what the codes are."""
    return (
        f"Earlier in this conversation I gave you {count} exact codes: a batch code, a "
        "Latin code word and a Chinese code phrase (中文口令). Your context now holds only "
        "a summary that deliberately left them out, but the original messages are "
        "archived. Recover them exactly: use history_search (try keywords such as "
        "'batch code', 'Latin code', '中文口令'), then history_read on the source ids you "
        "find, then save a task_note that cites those source ids. Finally answer with only "
        'a JSON object of the form {"codes": ["..."]} listing every code exactly as I '
        "wrote it, without the backticks."
    )


def _folded(text: str) -> str:
    """Letters and digits only, casefolded: catches a code re-punctuated or re-cased."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def leaked_codes(text: str, codes: list[str]) -> list[str]:
    """The codes that appear in `text`, even with changed case or separators."""
    folded = _folded(text)
    return [code for code in codes if _folded(code) in folded]


def parse_manifest(text: str) -> list[str] | None:
    """The `codes` list of the first JSON object in `text` that has one, else None.

    Models wrap JSON in prose or code fences however they like, so every `{`
    is tried as the start of an object rather than demanding a bare answer.
    """
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char != "{":
            continue
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("codes"), list):
            codes = value["codes"]
            if all(isinstance(code, str) for code in codes):
                return codes
    return None


# --------------------------------------------------------------------------- the summarizer


class OmitCodesSummarizer:
    """The runtime's own model client, with one extra line in the summary instructions.

    It stands in for `CompactService.model` during the forced compaction, so
    the engine's normal `/compact` path runs unchanged (selection, the region
    transaction, archive capture) and only the summarizer's system message
    grows. A request that is not the engine's summary request fails as a
    ModelError, which the transaction turns into a clean failed compaction.
    """

    def __init__(self, client: ModelClient, extra: str) -> None:
        self.client = client
        self.extra = extra
        self.calls = 0

    async def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Completion:
        first = messages[0] if messages else {}
        if first.get("role") != "system" or first.get("content") != SUMMARY_INSTRUCTIONS:
            raise ModelError("bad_request", "not the engine's summary request; refusing")
        self.calls += 1
        system = {**first, "content": f"{first['content']}\n\n{self.extra}"}
        return await self.client.complete([system, *messages[1:]], **kwargs)


# --------------------------------------------------------------------------- the run


@dataclass
class Report:
    """Everything the output file records; checks start failed and are proven true."""

    codes: list[str]
    checks: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(CHECKS, False))
    details: dict[str, str] = field(default_factory=dict)
    planted_replies: list[str] = field(default_factory=list)
    summary: str | None = None
    answer: str | None = None
    notes: dict[str, Any] | None = None
    thread_id: str | None = None
    transcript: list[LogEvent] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks[name] = ok
        if detail:
            self.details[name] = detail
        return ok

    @property
    def passed(self) -> bool:
        return self.error is None and all(self.checks.values())

    @contextlib.contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[phase] = round(time.perf_counter() - started, 3)


class StopCheck(Exception):
    """A stage failed so that later stages would test nothing; its check says why."""


@dataclass(frozen=True)
class TurnLog:
    """The log events one prompt produced, from its inbox entry to its turn's end."""

    events: list[LogEvent]
    timed_out: bool

    def of_kind(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def status(self) -> str:
        if self.timed_out:
            return "timed out"
        ends = self.of_kind(ev.TurnEnd)
        if not ends:
            return "did not end"
        end = ends[-1]
        return str(end.status) + (f" ({end.error})" if end.error else "")

    @property
    def final_text(self) -> str | None:
        """The last assistant message that asked for no tool: the answer."""
        for event in reversed(self.of_kind(ev.AssistantMessage)):
            if not event.tool_calls and not event.cancelled:
                return event.content or ""
        return None

    def tool_results(self, name: str) -> list[dict[str, Any]]:
        """Parsed results of one tool; unparseable content counts as an error result."""
        out = []
        for event in self.of_kind(ev.ToolResult):
            if event.name != name:
                continue
            try:
                parsed = json.loads(event.content)
            except json.JSONDecodeError:
                parsed = None
            out.append(parsed if isinstance(parsed, dict) else {"status": "error"})
        return out


async def run_turn(runtime: Runtime, text: str, timeout: float) -> TurnLog:
    """Send one prompt and wait for the driver to go idle, cancelling after `timeout`.

    A real model can loop on tool calls or stall; the timeout bounds the run
    and the cancelled turn still closes its bracket in the log.
    """
    queued = runtime.driver.send(text)
    timed_out = False
    try:
        await asyncio.wait_for(runtime.driver.when_idle(), timeout)
    except TimeoutError:
        timed_out = True
        runtime.driver.cancel()
        await runtime.driver.when_idle()
    return TurnLog([e for e in runtime.thread.log.events if e.seq > queued], timed_out)


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
