"""Named models (issue 28, point 2): `models:` in the config, `--model`, `$TROVE_MODEL`,
`/model`, which model wrote each reply, and the context window following the model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine import events as ev
from engine.config import ConfigError, parse_config
from engine.config.models import UnknownModelError, model_names, with_model
from engine.log import read_events
from engine.model.backend import choose_backend
from engine.runtime import Runtime
from tests.cli_support import Env, trove
from tests.support import chat_messages, opened


@pytest.fixture
def other() -> Iterator[ScriptedServer]:
    """A second endpoint, for a second model."""
    with ScriptedServer() as srv:
        yield srv


def _config(a: str, b: str, extra: str = "") -> str:
    return (
        "model:\n"
        "  max_retries: 0\n"
        f"{extra}"
        "models:\n"
        "  fast:\n"
        f"    base_url: {a}\n"
        "    api_key: key-a\n"
        "    name: model-a\n"
        "    context_window: 4000\n"
        "  deep:\n"
        f"    base_url: {b}\n"
        "    api_key_env: DEEP_KEY\n"
        "    name: model-b\n"
        "    context_window: 64000\n"
    )


@pytest.fixture
def two(tmp_path: Path, server: ScriptedServer, other: ScriptedServer) -> Env:
    config = tmp_path / "config.yaml"
    config.write_text(_config(server.base_url, other.base_url))
    return Env(tmp_path / "home", config)


def _replies(home: Path) -> list[ev.AssistantMessage]:
    logs = sorted((home / "users" / "local" / "threads").glob("*/session.jsonl"))
    events = [e for log in logs for e in read_events(log).events]
    return [e for e in events if isinstance(e, ev.AssistantMessage)]


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


# -- the config ---------------------------------------------------------------------------


def _parsed(text: str, env: dict[str, str] | None = None):
    import yaml

    return parse_config(yaml.safe_load(text), source="c.yaml", env=env or {})


def test_an_entry_takes_what_it_leaves_out_from_model_but_never_its_key() -> None:
    config = _parsed(
        "model:\n  base_url: http://shared/v1\n  api_key: shared-key\n  timeout: 9\n"
        "models:\n"
        "  same-endpoint:\n    name: m1\n"
        "  elsewhere:\n    base_url: http://other/v1\n"
    )
    assert model_names(config) == ["same-endpoint", "elsewhere"]
    same = with_model(config, "same-endpoint", {}).model
    assert (same.base_url, same.api_key, same.name, same.timeout) == (
        "http://shared/v1",
        "shared-key",
        "m1",
        9,
    )
    away = with_model(config, "elsewhere", {"OPENAI_API_KEY": "sk-env"}).model
    assert (away.base_url, away.api_key, away.name) == ("http://other/v1", None, "elsewhere")


def test_a_key_from_a_named_variable_is_read_when_chosen_and_never_shown() -> None:
    config = _parsed(_config("http://a/v1", "http://b/v1"))
    chosen = with_model(config, "deep", {"DEEP_KEY": "sk-secret-deep"}).model
    assert chosen.api_key == "sk-secret-deep"
    assert "sk-secret" not in repr(chosen) and "key-a" not in repr(config)
    with pytest.raises(ConfigError) as unset:
        with_model(config, "deep", {}, "--model")
    assert str(unset.value) == "--model: models.deep.api_key_env: $DEEP_KEY is not set"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("models:\n  fast:\n    nmae: x\n", "unknown key 'models.fast.nmae' (did you mean"),
        ("models:\n  fast:\n    context_window: 0\n", "models.fast.context_window: expected"),
        ("models:\n  fast:\n    api_key_env: not a name\n", "models.fast.api_key_env: expected"),
        ("models: [a, b]\n", "models: expected a mapping of names to models"),
        ("model:\n  default: fast\n", "model.default: no model 'fast' in models:"),
        (
            "model:\n  default: slow\nmodels:\n  fast: {}\n  deep: {}\n",
            "model.default: no model 'slow' in models: (models: fast, deep)",
        ),
    ],
)
def test_a_bad_models_section_is_one_line_naming_the_key(text: str, error: str) -> None:
    with pytest.raises(ConfigError) as bad:
        _parsed(text)
    assert str(bad.value).startswith("c.yaml: ") and error in str(bad.value)
    assert "\n" not in str(bad.value)


def test_old_replies_without_the_model_entry_still_decode() -> None:
    from engine.log.line_codec import decode_line

    old = b'{"kind":"assistant/message","seq":3,"ts":"t","content":"hi","model":"m"}'
    reply = decode_line(old)
    assert isinstance(reply, ev.AssistantMessage) and reply.model_entry is None
    new = ev.AssistantMessage(seq=4, content="hi", model="m", model_entry="fast")
    assert json.loads(msgspec.json.encode(new))["model_entry"] == "fast"
    assert "model_entry" not in json.loads(msgspec.json.encode(reply))


# -- which model a launch uses ------------------------------------------------------------


def test_model_option_then_trove_model_then_default_then_the_first() -> None:
    config = _parsed(_config("http://a/v1", "http://b/v1"))
    env = {"DEEP_KEY": "k"}
    assert choose_backend(config, env).entry == "fast"
    assert choose_backend(config, env | {"TROVE_MODEL": "deep"}).entry == "deep"
    both = env | {"TROVE_MODEL": "deep"}
    assert choose_backend(config, both, model="fast").entry == "fast"
    defaulted = _parsed(_config("http://a/v1", "http://b/v1", "  default: deep\n"))
    chosen = choose_backend(defaulted, env)
    assert (chosen.entry, chosen.model_name, chosen.context_window) == ("deep", "model-b", 64000)
    assert chosen.label == "deep · model-b · b"
    with pytest.raises(UnknownModelError) as bad:
        choose_backend(config, env | {"TROVE_MODEL": "nope"})
    assert str(bad.value) == "$TROVE_MODEL: no model 'nope' (models: fast, deep)"


def test_without_models_the_one_model_is_named_by_its_id() -> None:
    config = _parsed("model:\n  base_url: http://a/v1\n  name: llama3\n")
    assert choose_backend(config, {}, model="llama3").model_name == "llama3"
    with pytest.raises(UnknownModelError) as bad:
        choose_backend(config, {}, model="gpt-4o")
    assert "no model 'gpt-4o' (models: llama3; add models: entries" in str(bad.value)


def test_model_option_picks_the_endpoint_the_model_and_records_the_entry(
    two: Env, server: ScriptedServer, other: ScriptedServer
) -> None:
    other.script(s.text("from b"))
    result = trove("-p", "hi", "--model", "deep", *two.common)
    assert result.returncode == 2  # DEEP_KEY is not set: one line, nothing sent
    assert "models.deep.api_key_env: $DEEP_KEY is not set" in _one_line(result.stderr)
    assert other.requests == [] and server.requests == []


def test_trove_model_in_the_environment(
    two: Env, server: ScriptedServer, other: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEP_KEY", "sk-deep")
    monkeypatch.setenv("TROVE_MODEL", "deep")
    other.script(s.text("from b"))
    result = trove("-p", "hi", *two.common)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "from b"
    assert other.requests[0]["model"] == "model-b" and server.requests == []
    (reply,) = _replies(two.home)
    assert (reply.model, reply.model_entry) == ("model-b", "deep")
    bad = trove("-p", "hi", "--model", "nope", *two.common)
    assert bad.returncode == 2
    assert _one_line(bad.stderr) == "trove: --model: no model 'nope' (models: fast, deep)"
    both = trove("-p", "hi", "--model", "fast", "--local", *two.common)
    assert both.returncode == 2


# -- /model -------------------------------------------------------------------------------


def test_plain_model_lists_marks_and_switches_between_turns(
    two: Env, server: ScriptedServer, other: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEP_KEY", "sk-deep")
    server.script(s.text("from a"))
    other.script(s.text("from b"))
    result = trove("--plain", *two.common, stdin="one\n/model\n/model deep\ntwo\n/model nope\n")
    assert result.returncode == 0, result.stderr
    assert "* fast  model-a" in result.stdout and "  deep  model-b" in result.stdout
    assert "Now using deep · model-b" in result.stdout and "64,000 tokens" in result.stdout
    assert "no model 'nope' (models: fast, deep)" in result.stderr
    assert [r["model"] for r in server.requests] == ["model-a"]
    assert [r["model"] for r in other.requests] == ["model-b"]
    # The second model is sent the whole conversation, the first reply with it.
    assert [m["content"] for m in chat_messages(other.requests[0])] == [
        "one",
        "from a",
        "two",
    ]
    assert [(r.content, r.model_entry) for r in _replies(two.home)] == [
        ("from a", "fast"),
        ("from b", "deep"),
    ]
    from engine.runtime.export import thread_markdown

    (log,) = (two.home / "users" / "local" / "threads").glob("*/session.jsonl")
    markdown = thread_markdown("t", read_events(log).events)
    assert "## Assistant (fast)\n\nfrom a" in markdown
    assert "## Assistant (deep)\n\nfrom b" in markdown


async def test_model_is_refused_while_a_reply_runs_and_the_window_follows(
    tmp_path: Path, server: ScriptedServer, other: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    monkeypatch.setenv("DEEP_KEY", "sk-deep")
    config = parse_config(
        yaml.safe_load(_config(server.base_url, other.base_url)), source="c", env={}
    )
    backend = choose_backend(config, {"DEEP_KEY": "sk-deep"})
    runtime = opened(Runtime.open(config, tmp_path, backend=backend))
    assert runtime.compaction.context_window == 4000
    server.script(s.text("slow answer", hold="before"))
    runtime.driver.send("first")
    await server.wait_requests(1)
    refused = await runtime.commands.run("/model deep")
    assert not refused.ok and refused.text.startswith("not switched: a reply runs;")
    server.release()
    await runtime.driver.when_idle()
    switched = await runtime.commands.run("/model deep")
    assert switched.ok, switched.text
    assert runtime.compaction.context_window == 64000
    assert runtime.backend is not None and runtime.backend.entry == "deep"
    listing = await runtime.commands.run("/model")
    assert "* deep" in listing.text and "  fast" in listing.text
