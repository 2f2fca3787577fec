"""devtools/live_check.py, run as a process against a scripted "real" endpoint.

The script exists for real models, but its plumbing (endpoints file, forced
compaction with the omit-codes summary, resume, the recovery checks, the
output record and exit codes) must not rot between manual runs. The scripted
model here behaves as a cooperative model would: it learns nothing in advance
and recovers the codes only from what the tools return, so source ids (hashes
the test cannot know) are cited from the previous tool result.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import Reply, ScriptedServer
from engine.compaction.prompt import SUMMARY_INSTRUCTIONS

ROOT = Path(__file__).resolve().parents[1]

API_KEY = "sk-live-check-secret-0123456789"
OMIT_MARK = "do not include any batch codes"
BACKTICKED = re.compile(r"`([^`]+)`")


class CooperativeModel:
    """A scripted model that recovers the codes with search → read → note → manifest.

    Used as the ScriptedServer fallback, so each reply is computed from the
    request body: the planted codes appear in the answer only because
    history_read returned them. `wrong` drops one code from the manifest;
    `leak` writes a summary that quotes the conversation (codes included).
    """

    def __init__(self, *, wrong: bool = False, leak: bool = False) -> None:
        self.wrong = wrong
        self.leak = leak
        self.summaries = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        if _is_summary(body):
            self.summaries += 1
            return self._summary(messages)
        if not self.summaries:
            return s.text("Noted.")
        last = messages[-1]
        if last["role"] == "user":
            return s.tool_calls([("history_search", {"query": "code"})])
        results = _latest_tool_results(messages)
        names = {name for name, _ in results}
        if names == {"history_search"}:
            found = [
                hit["id"]
                for _, result in results
                for hit in result.get("results", ())
                if hit["origin"] == "archive"
            ]
            return s.tool_calls([("history_read", {"source_id": i}) for i in found])
        if names == {"history_read"}:
            codes = [code for _, page in results for code in BACKTICKED.findall(page["text"])]
            ids = [page["id"] for _, page in results if BACKTICKED.search(page["text"])]
            note = {"key": "codes", "content": " ".join(codes), "source_ids": ids[:4]}
            return s.tool_calls([("task_note", note)])
        if names == {"task_note"}:
            codes = _note_codes(messages)
            if self.wrong:
                codes = codes[:-1]
            manifest = json.dumps({"codes": codes}, ensure_ascii=False)
            return s.text(f"Recovered from the archive:\n\n```json\n{manifest}\n```\n")
        return s.text("I am lost.")

    def _summary(self, messages: list[dict[str, Any]]) -> Reply:
        system = messages[0]["content"]
        if self.leak or OMIT_MARK not in system:
            return s.text("Summary: " + messages[-1]["content"])
        return s.text("The user gave three codes to keep; they must be recovered from the archive.")


def _is_summary(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or [{}]
    return str(messages[0].get("content", "")).startswith(SUMMARY_INSTRUCTIONS)


def _latest_tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The trailing tool messages, each with the tool name its call named."""
    names = {
        call["id"]: call["function"]["name"]
        for m in messages
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or ()
    }
    out: list[tuple[str, dict[str, Any]]] = []
    for message in reversed(messages):
        if message["role"] != "tool":
            break
        out.insert(0, (names[message["tool_call_id"]], json.loads(message["content"])))
    return out


def _note_codes(messages: list[dict[str, Any]]) -> list[str]:
    """What the model wrote in its note: it answers from its own notebook."""
    for message in reversed(messages):
        for call in message.get("tool_calls") or ():
            if call["function"]["name"] == "task_note":
                return json.loads(call["function"]["arguments"])["content"].split(" ")
    return []


def _endpoints(tmp_path: Path, server: ScriptedServer, *, key: bool = True) -> Path:
    path = tmp_path / "private-endpoints.json"
    data = {"base_url": server.base_url, "model": "scripted-model"}
    if key:
        data["api_key"] = API_KEY
    path.write_text(json.dumps(data))
    return path


def _run(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "devtools.live_check", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
        # The script imports this checkout's engine, not whichever one is installed.
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


@pytest.fixture
def cooperative() -> Iterator[tuple[ScriptedServer, CooperativeModel]]:
    model = CooperativeModel()
    with ScriptedServer(fallback=model) as server:
        yield server, model


def test_the_whole_recovery_passes(tmp_path: Path, cooperative):
    server, _ = cooperative
    output = tmp_path / "result.json"
    home = tmp_path / "home"
    result = _run("--endpoints", _endpoints(tmp_path, server), "--output", output, "--home", home)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "PASS"
    record = json.loads(output.read_text(encoding="utf-8"))
    assert record["passed"] is True and record["error"] is None
    assert all(record["checks"].values()) and len(record["checks"]) == len(lines) - 1
    codes = record["codes"]
    assert len(codes) == 3 and codes[0].startswith("BATCH-")
    assert re.fullmatch(r"[\u3400-\u9fff]{6}", codes[2])
    assert not any(code in record["summary"] for code in codes)
    # The summarizer got the engine's own request plus the omit line.
    summary_requests = [r for r in server.requests if _is_summary(r)]
    assert len(summary_requests) == 1
    assert OMIT_MARK in summary_requests[0]["messages"][0]["content"]
    # Planting offered no tools; the rebuilt agent had them.
    assert "tools" not in server.requests[0]
    assert {t["function"]["name"] for t in server.requests[-1]["tools"]} >= {
        "history_search",
        "history_read",
        "task_note",
    }
    kinds = [event["kind"] for event in record["transcript"]]
    assert "session/end-seed" in kinds and "compact/end" in kinds
    tools = [e["name"] for e in record["transcript"] if e["kind"] == "tool/result"]
    assert tools[0] == "history_search" and tools[-1] == "task_note"
    assert "history_read" in tools
    citation = record["notes"]["notes"][0]["citations"][0]
    assert citation["status"] == "available"
    assert record["model"] == "scripted-model" and record["base_url"] == server.base_url
    assert set(record["timings"]) >= {"plant", "compact", "recover", "total"}
    assert API_KEY not in output.read_text(encoding="utf-8")
    assert API_KEY not in result.stdout + result.stderr
    assert (home / "users" / "local" / "threads" / record["thread_id"]).is_dir()


def test_a_wrong_manifest_fails(tmp_path: Path):
    other_key = "sk-meant-for-another-endpoint"
    with ScriptedServer(fallback=CooperativeModel(wrong=True)) as server:
        output = tmp_path / "result.json"
        endpoints = _endpoints(tmp_path, server, key=False)
        result = _run(
            "--endpoints", endpoints, "--output", output, env={"OPENAI_API_KEY": other_key}
        )
    # A file without a key never borrows the environment's key for this endpoint.
    assert server.request_headers
    assert not any(other_key in h.get("authorization", "") for h in server.request_headers)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "FAIL"
    assert any(line.startswith("FAIL manifest") for line in result.stdout.splitlines())
    record = json.loads(output.read_text(encoding="utf-8"))
    assert record["passed"] is False and record["checks"]["manifest"] is False
    assert all(ok for name, ok in record["checks"].items() if name != "manifest")
    assert "planted" in record["details"]["manifest"]


def test_a_summary_that_keeps_the_codes_fails(tmp_path: Path):
    with ScriptedServer(fallback=CooperativeModel(leak=True)) as server:
        output = tmp_path / "result.json"
        result = _run("--endpoints", _endpoints(tmp_path, server), "--output", output)
    assert result.returncode == 1, result.stdout + result.stderr
    record = json.loads(output.read_text(encoding="utf-8"))
    assert record["checks"]["summary_omits_codes"] is False
    assert record["checks"]["context_hides_codes"] is False
    assert any(code in record["summary"] for code in record["codes"])
    assert "the summary contains" in record["details"]["summary_omits_codes"]


def _tracked(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    path = repo / "endpoints.json"
    path.write_text(json.dumps({"base_url": "http://127.0.0.1:9/v1", "model": "m"}))
    subprocess.run(["git", "add", "endpoints.json"], cwd=repo, check=True)
    return path


BAD_ENDPOINTS: dict[str, tuple[str | None, str]] = {
    "missing": (None, "no such file"),
    "not json": ("{base_url: ", "not valid JSON"),
    "not an object": ("[]", "expected a JSON object"),
    "no model": ('{"base_url": "http://127.0.0.1:9/v1"}', "'model'"),
    "bad url": ('{"base_url": "ftp://x", "model": "m"}', "'base_url'"),
    "unknown key": (
        '{"base_url": "http://127.0.0.1:9/v1", "model": "m", "apikey": "k"}',
        "unknown key 'apikey'",
    ),
    "empty key": ('{"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": ""}', "api_key"),
}


@pytest.mark.parametrize("case", [*BAD_ENDPOINTS, "tracked by git"])
def test_a_bad_endpoints_file_is_one_line_and_exit_2(tmp_path: Path, case: str):
    if case == "tracked by git":
        path, expected = _tracked(tmp_path), "tracked by git"
    else:
        content, expected = BAD_ENDPOINTS[case]
        path = tmp_path / "endpoints.json"
        if content is not None:
            path.write_text(content)
    output = tmp_path / "result.json"
    result = _run("--endpoints", path, "--output", output)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1
    assert expected in result.stderr
    assert not output.exists()


def test_missing_arguments_are_usage_errors(tmp_path: Path):
    result = _run("--output", tmp_path / "result.json")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--endpoints" in result.stderr
