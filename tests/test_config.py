"""Config loading: defaults, env expansion, and one-line errors that say what and where."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Literal, get_args, get_origin

import msgspec
import pytest
import yaml

from engine.config import (
    CompactionConfig,
    Config,
    ConfigError,
    LocalConfig,
    ModelConfig,
    TaskContinuityConfig,
    UiConfig,
    default_home,
    key_descriptions,
    load_config,
    parse_config,
    valid_user_id,
)
from engine.config.mcp import McpConfig
from engine.config.schema import leaves, named_leaves

EXAMPLE = Path(__file__).resolve().parent.parent / "config.example.yaml"

SECTIONS = {
    "model": ModelConfig,
    "compaction": CompactionConfig,
    "task_continuity": TaskContinuityConfig,
    "local": LocalConfig,
    "ui": UiConfig,
    "mcp": McpConfig,
}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------- where config comes from


def test_defaults_without_a_file(tmp_path: Path) -> None:
    config = load_config(None, home=tmp_path, env={})
    assert config == Config()
    assert config.source is None
    assert config.model.name == "gpt-4o-mini"
    assert config.model.base_url is None and config.model.api_key is None
    assert config.compaction.threshold == 0.8
    assert config.user_id == "local"


def test_home_config_is_picked_up(tmp_path: Path) -> None:
    path = write(tmp_path / "config.yaml", "model:\n  name: qwen2.5\nuser_id: alice\n")
    config = load_config(None, home=tmp_path, env={})
    assert config.model.name == "qwen2.5"
    assert config.user_id == "alice"
    assert config.source == path
    assert config.compaction == CompactionConfig()


def test_explicit_path_wins_over_home(tmp_path: Path) -> None:
    write(tmp_path / "home" / "config.yaml", "user_id: from-home\n")
    other = write(tmp_path / "other.yaml", "user_id: from-flag\n")
    config = load_config(other, home=tmp_path / "home", env={})
    assert config.user_id == "from-flag"
    assert config.source == other


def test_explicit_missing_path_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        load_config(missing, home=tmp_path, env={})
    assert str(info.value) == f"{missing}: no such config file"


@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n", "---\n"])
def test_empty_file_means_defaults(tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "c.yaml", text)
    assert load_config(path, home=tmp_path, env={}) == Config(source=path)


def test_section_with_everything_commented_out_is_empty(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", "model:\n  # name: x\nui:\n")
    assert load_config(path, home=tmp_path, env={}) == Config(source=path)


def test_unreadable_home_config_is_reported_not_ignored(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").mkdir()
    with pytest.raises(ConfigError) as info:
        load_config(None, home=tmp_path, env={})
    assert str(info.value).startswith(f"{tmp_path / 'config.yaml'}: cannot read config file")


def test_default_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TROVE_HOME", str(tmp_path))
    assert default_home() == tmp_path
    monkeypatch.delenv("TROVE_HOME")
    assert default_home().name == "trove"


def test_full_config_is_converted(tmp_path: Path) -> None:
    text = """
model:
  provider: openai
  base_url: https://api.deepseek.com/v1
  api_key: sk-abc
  name: deepseek-chat
  context_window: 64000
  max_retries: 0
  timeout: 30
  max_tokens: 2048
  tools: off
compaction: {auto: false, threshold: 1, keep_recent_tokens: 0, model: small}
task_continuity: {enabled: false, max_batches: 1, max_records_per_batch: 2,
                  max_record_chars: 3}
local: {model_path: /m.gguf, threads: 2, context: 256}
ui: {theme: nord}
user_id: a.b_c-9
"""
    config = load_config(write(tmp_path / "c.yaml", text), home=tmp_path, env={})
    assert config.model == ModelConfig(
        provider="openai",
        base_url="https://api.deepseek.com/v1",
        api_key="sk-abc",
        name="deepseek-chat",
        context_window=64000,
        max_retries=0,
        timeout=30.0,
        max_tokens=2048,
        tools="off",  # YAML 1.1 reads bare `off` as false; it still means "off"
    )
    assert isinstance(config.model.timeout, float)
    assert config.compaction == CompactionConfig(False, 1.0, 0, "small")
    assert config.task_continuity == TaskContinuityConfig(False, 1, 2, 3)
    assert config.local == LocalConfig("/m.gguf", 2, 256)
    assert config.ui == UiConfig("nord")
    assert config.user_id == "a.b_c-9"


def test_api_key_is_not_in_repr() -> None:
    config = parse_config({"model": {"api_key": "sk-secret"}}, source="c.yaml", env={})
    assert config.model.api_key == "sk-secret"
    assert "sk-secret" not in repr(config)
    assert "sk-secret" not in str(list(config.model.__rich_repr__()))
    assert repr(config.model).startswith("ModelConfig(provider='auto', base_url=None, name=")


@pytest.mark.parametrize(
    ("user_id", "valid"),
    [
        ("alice", True),
        ("a.b_c-9", True),
        ("...", True),
        ("a" * 64, True),
        (".", False),
        ("..", False),
        ("", False),
        ("a/b", False),
        ("abc\n", False),
        ("a" * 65, False),
        (7, False),
    ],
)
def test_valid_user_id_is_the_user_id_key_rule(user_id: object, valid: bool) -> None:
    assert valid_user_id(user_id) is valid
    if valid:
        assert parse_config({"user_id": user_id}, source="c.yaml", env={}).user_id == user_id
    else:
        with pytest.raises(ConfigError, match="^c.yaml: user_id: expected 1-64 characters"):
            parse_config({"user_id": user_id}, source="c.yaml", env={})


# ----------------------------------------------------------------- environment


def test_env_expansion() -> None:
    env = {"KEY": "sk-1", "HOST": "127.0.0.1", "EMPTY": ""}
    data = {
        "model": {
            "api_key": "${KEY}",
            "base_url": "http://${HOST}:${PORT:-11434}/v1",
            "name": "${MODEL:-llama3}",
        },
        "compaction": {"model": "${EMPTY:-small}"},
        "ui": {"theme": "pre-${UNSET}-post"},
    }
    config = parse_config(data, source="c.yaml", env=env)
    assert config.model.api_key == "sk-1"
    assert config.model.base_url == "http://127.0.0.1:11434/v1"
    assert config.model.name == "llama3"
    assert config.compaction.model == "small"  # :- also replaces an empty value
    assert config.ui.theme == "pre--post"  # unset without a default is ""


def test_expanded_values_can_fill_number_and_bool_fields() -> None:
    data = {
        "model": {"context_window": "${CTX}", "timeout": "${T:-30}", "tools": "${TOOLS}"},
        "compaction": {"auto": "${AUTO}", "threshold": "${TH}"},
        "local": {"threads": "${THREADS}"},
    }
    env = {"CTX": "32000", "TOOLS": "off", "AUTO": "false", "TH": "0.5", "THREADS": ""}
    config = parse_config(data, source="c.yaml", env=env)
    assert config.model.context_window == 32000
    assert config.model.timeout == 30.0
    assert config.model.tools == "off"
    assert config.compaction.auto is False
    assert config.compaction.threshold == 0.5
    assert config.local.threads is None
    # a literal string is still not a number: only environment text is read as YAML
    with pytest.raises(ConfigError, match="got string '32000'$"):
        parse_config({"model": {"context_window": "32000"}}, source="c.yaml", env={})
    with pytest.raises(ConfigError, match=r"got string 'x' \(from '\$\{CTX\}'\)$"):
        parse_config({"model": {"context_window": "${CTX}"}}, source="c.yaml", env={"CTX": "x"})


def test_literal_dollar_brace_escape_and_plain_dollars() -> None:
    data = {"model": {"api_key": "a$${KEY}b$c$$d"}}
    config = parse_config(data, source="c.yaml", env={"KEY": "no"})
    assert config.model.api_key == "a${KEY}b$c$$d"


def test_unset_var_makes_nullable_fields_unset() -> None:
    data = {"model": {"api_key": "${NOPE}"}, "local": {"model_path": "${NOPE}"}}
    config = parse_config(data, source="c.yaml", env={})
    assert config.model.api_key is None
    assert config.local.model_path is None


def test_openai_env_fallbacks() -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "OPENAI_API_KEY": "sk-env"}
    config = parse_config({}, source="c.yaml", env=env)
    assert config.model.base_url == "http://127.0.0.1:8080/v1"
    assert config.model.api_key == "sk-env"
    assert load_config(None, home=Path("/nonexistent-trove-home"), env=env).model == config.model


def test_explicit_values_beat_openai_env() -> None:
    env = {"OPENAI_BASE_URL": "http://a.example/v1", "OPENAI_API_KEY": "sk-env"}
    data = {"model": {"base_url": "http://b.example/v1", "api_key": "sk-file"}}
    config = parse_config(data, source="c.yaml", env=env)
    assert config.model.base_url == "http://b.example/v1"
    assert config.model.api_key == "sk-file"


def test_key_expanding_to_empty_falls_back_to_openai_env() -> None:
    env = {"OPENAI_API_KEY": "sk-env"}
    config = parse_config({"model": {"api_key": "${MY_KEY}"}}, source="c.yaml", env=env)
    assert config.model.api_key == "sk-env"


def test_empty_openai_env_means_unset() -> None:
    config = parse_config({}, source="c.yaml", env={"OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""})
    assert config.model.base_url is None and config.model.api_key is None


def test_bad_openai_base_url_env_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({}, source="c.yaml", env={"OPENAI_BASE_URL": "localhost:1234"})
    message = str(info.value)
    assert message.startswith("c.yaml: model.base_url: expected an http")
    assert "$OPENAI_BASE_URL" in message


def test_parse_uses_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TROVE_TEST_MODEL", "from-os")
    config = parse_config({"model": {"name": "${TROVE_TEST_MODEL}"}}, source="c.yaml")
    assert config.model.name == "from-os"


# ----------------------------------------------------------------- errors

BAD = [
    pytest.param("nonsense: 1\n", "nonsense", "unknown key", id="unknown-top-key"),
    pytest.param(
        "model:\n  nme: x\n",
        "model.nme",
        "(did you mean 'model.name'?)",
        id="unknown-nested-key-suggests",
    ),
    pytest.param(
        "name: x\n", "name", "(did you mean 'model.name'?)", id="key-in-wrong-section-suggests"
    ),
    pytest.param(
        "model:\n  context_window: true\n",
        "model.context_window",
        "expected an integer >= 1, got boolean true",
        id="bool-for-int",
    ),
    pytest.param(
        "compaction:\n  threshold: high\n",
        "compaction.threshold",
        "got string 'high'",
        id="string-for-float",
    ),
    pytest.param(
        "compaction:\n  auto: 1\n",
        "compaction.auto",
        "expected true or false, got integer 1",
        id="int-for-bool",
    ),
    pytest.param(
        "model:\n  provider: anthropic\n",
        "model.provider",
        "expected one of 'openai', 'local', 'auto', got string 'anthropic'",
        id="bad-provider",
    ),
    pytest.param(
        "model:\n  tools: sometimes\n",
        "model.tools",
        "expected one of 'auto', 'on', 'off'",
        id="bad-tools",
    ),
    pytest.param(
        "compaction:\n  threshold: 0\n",
        "compaction.threshold",
        "expected a number > 0 and <= 1, got integer 0",
        id="threshold-0",
    ),
    pytest.param(
        "compaction:\n  threshold: 1.5\n",
        "compaction.threshold",
        "got number 1.5",
        id="threshold-1.5",
    ),
    pytest.param(
        "compaction:\n  threshold: .nan\n", "compaction.threshold", "got number nan", id="nan"
    ),
    pytest.param(
        "model:\n  timeout: .inf\n", "model.timeout", "expected a number > 0", id="inf-timeout"
    ),
    pytest.param(
        "model:\n  timeout: 0\n", "model.timeout", "expected a number > 0", id="timeout-0"
    ),
    pytest.param(
        "model:\n  timeout: 1" + "0" * 400 + "\n",
        "model.timeout",
        "expected a number > 0, got integer 1000",
        id="timeout-beyond-float",
    ),
    pytest.param(
        "model:\n  context_window: 0\n", "model.context_window", "got integer 0", id="window-0"
    ),
    pytest.param(
        "model:\n  max_retries: 11\n",
        "model.max_retries",
        "expected an integer from 0 to 10, got integer 11",
        id="retries-11",
    ),
    pytest.param(
        "model:\n  max_retries: -1\n", "model.max_retries", "got integer -1", id="retries"
    ),
    pytest.param("model:\n  max_tokens: 0\n", "model.max_tokens", "or null", id="max-tokens-0"),
    pytest.param(
        "model:\n  context_window: 1.5\n", "model.context_window", "got number 1.5", id="float-int"
    ),
    pytest.param(
        "model:\n  context_window: null\n",
        "model.context_window",
        "got null",
        id="null-where-default-is-not-none",
    ),
    pytest.param("model:\n  name: ''\n", "model.name", "non-empty string", id="empty-name"),
    pytest.param("model:\n  name: [a]\n", "model.name", "got a list", id="list-for-str"),
    pytest.param(
        "model:\n  base_url: localhost:11434\n", "model.base_url", "http:// or https://", id="url"
    ),
    pytest.param(
        "compaction:\n  keep_recent_tokens: -1\n",
        "compaction.keep_recent_tokens",
        "got integer -1",
        id="keep-negative",
    ),
    pytest.param(
        "task_continuity:\n  max_batches: 0\n", "task_continuity.max_batches", ">= 1", id="batches"
    ),
    pytest.param(
        "task_continuity:\n  max_records_per_batch: 0\n",
        "task_continuity.max_records_per_batch",
        ">= 1",
        id="records",
    ),
    pytest.param(
        "task_continuity:\n  max_record_chars: 0\n",
        "task_continuity.max_record_chars",
        ">= 1",
        id="chars",
    ),
    pytest.param(
        "task_continuity:\n  enabled: 'yes'\n",
        "task_continuity.enabled",
        "got string 'yes'",
        id="quoted-bool",
    ),
    pytest.param("local:\n  threads: 0\n", "local.threads", ">= 1 or null", id="threads-0"),
    pytest.param("local:\n  context: 255\n", "local.context", ">= 256", id="local-context"),
    pytest.param("ui:\n  theme: 3\n", "ui.theme", "got integer 3", id="theme-type"),
    pytest.param("user_id: ../x\n", "user_id", "got string '../x'", id="user-id-traversal"),
    pytest.param("user_id: ..\n", "user_id", "got string '..'", id="user-id-dotdot"),
    pytest.param("user_id: a/b\n", "user_id", "it names a directory", id="user-id-slash"),
    pytest.param("user_id: " + "a" * 65 + "\n", "user_id", "1-64 characters", id="user-id-long"),
    pytest.param("user_id: 1001\n", "user_id", "got integer 1001", id="user-id-int"),
    pytest.param(
        "model:\n  - name\n", "model", "expected a mapping, got a list", id="section-list"
    ),
    pytest.param("ui: dark\n", "ui", "expected a mapping, got string 'dark'", id="section-str"),
    pytest.param("- a\n- b\n", "top level", "expected a mapping, got a list", id="top-list"),
    pytest.param("just words\n", "top level", "got string 'just words'", id="top-scalar"),
    pytest.param(
        "model:\n  api_key: ${BAD-NAME}\n", "model.api_key", "${NAME:-default}", id="malformed-ref"
    ),
    pytest.param(
        "model:\n  context_window: ${N}\n",
        "model.context_window",
        "got string '' (from '${N}')",
        id="ref-in-int-field",
    ),
    pytest.param(
        "user_id: ${WHO}\n", "user_id", "got string '' (from '${WHO}')", id="ref-expands-empty"
    ),
    pytest.param('user_id: "a\\nb"\n', "user_id", "got string 'a\\nb'", id="newline-in-value"),
]


@pytest.mark.parametrize(("text", "key_path", "fragment"), BAD)
def test_each_error_is_one_line_naming_file_and_key(
    tmp_path: Path, text: str, key_path: str, fragment: str
) -> None:
    path = write(tmp_path / "bad-config.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config(path, home=tmp_path, env={})
    message = str(info.value)
    assert len(message.splitlines()) == 1, message
    assert message.startswith(f"{path}: "), message
    assert key_path in message, message
    assert fragment in message, message


def test_value_error_format_is_exact() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"model": {"context_window": True}}, source="c.yaml", env={})
    assert str(info.value) == (
        "c.yaml: model.context_window: expected an integer >= 1, got boolean true"
    )


def test_unknown_key_message_is_exact() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"model": {"nme": "x"}}, source="c.yaml", env={})
    assert str(info.value) == "c.yaml: unknown key 'model.nme' (did you mean 'model.name'?)"


def test_non_string_keys_are_unknown_keys() -> None:
    with pytest.raises(ConfigError, match=r"^c\.yaml: unknown key 'model\.1'$"):
        parse_config({"model": {1: "x"}}, source="c.yaml", env={})


SYNTAX = [
    pytest.param("model:\n  name: x\n bad: y\n", 3, id="bad-indent"),
    pytest.param("model:\n  name: [unclosed\n", 3, id="unclosed-flow"),
    pytest.param("model:\n\tname: x\n", 2, id="tab"),
    pytest.param("a: b: c\n", 1, id="nested-colon"),
    pytest.param("model:\n  name: x\n  name: y\n", 3, id="duplicate-key"),
    pytest.param("model: {}\nui: {}\nmodel: {}\n", 3, id="duplicate-section"),
    pytest.param("user_id: a\x07b\n", 1, id="control-char"),
    pytest.param("a: 1\n---\nb: 2\n", 2, id="two-documents"),
]


@pytest.mark.parametrize(("text", "line"), SYNTAX)
def test_yaml_syntax_errors_name_file_and_line(tmp_path: Path, text: str, line: int) -> None:
    path = write(tmp_path / "broken.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config(path, home=tmp_path, env={})
    message = str(info.value)
    assert len(message.splitlines()) == 1, message
    assert re.match(rf"^{re.escape(str(path))}:{line}: \S", message), message
    assert not re.search(r":\d+: but ", message), message  # the problem reads on its own


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"user_id: a\nui:\n  theme: \xff\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:3: not valid UTF-8$"):
        load_config(path, home=tmp_path, env={})


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"\xef\xbb\xbfuser_id: bom\n")
    assert load_config(path, home=tmp_path, env={}).user_id == "bom"


def test_merge_keys_may_be_overridden(tmp_path: Path) -> None:
    text = "model:\n  <<: {name: x, context_window: 10}\n  name: y\n"
    config = load_config(write(tmp_path / "c.yaml", text), home=tmp_path, env={})
    assert (config.model.name, config.model.context_window) == ("y", 10)


# ----------------------------------------------------------------- the example file


def test_example_loads_to_the_defaults(tmp_path: Path) -> None:
    config = load_config(EXAMPLE, home=tmp_path, env={})
    assert msgspec.structs.replace(config, source=None) == Config()


def test_example_covers_every_field() -> None:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    top = {f.name for f in msgspec.structs.fields(Config)} - {"source"}
    assert set(data) == top
    for name, cls in SECTIONS.items():
        fields = msgspec.structs.fields(cls)
        assert set(data[name]) == {f.name for f in fields}, name
        for f in fields:
            default = f.default_factory() if f.default is msgspec.NODEFAULT else f.default
            assert data[name][f.name] == default, f"{name}.{f.name}"
    assert data["user_id"] == Config().user_id
    assert data["models"] is None  # named models: shown as a commented example
    assert set(SECTIONS) == top - {"user_id", "models"}


def example_comments() -> dict[str, str]:
    """Each key's dotted path in config.example.yaml and the comment on its line."""
    comments: dict[str, str] = {}
    section = ""
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^(\s*)([a-z_]+):\s*(.*)$", line)
        if not match:
            continue
        indent, key, rest = match.groups()
        if not rest:
            section = key
            continue
        _, _, comment = rest.partition("  # ")
        comments[f"{section}.{key}" if indent else key] = comment.strip()
    return comments


def test_example_comments_are_the_declared_descriptions() -> None:
    # The declaration is the one place a key is documented; the example must say the same.
    declared = key_descriptions()
    assert all(declared.values()), [path for path, text in declared.items() if not text]
    assert example_comments() == declared


def test_descriptions_state_the_declared_rules() -> None:
    # A description that restates a bound or the choices must restate the checked ones.
    for path, spec in leaves(Config):
        base, meta = get_args(spec.type)
        for bound in (meta.ge, meta.gt, meta.le):
            if bound is not None:
                assert str(bound) in spec.description, path
        for choice in get_args(base) if get_origin(base) is Literal else ():
            assert choice in spec.description, path


def test_without_a_config_file_yaml_is_not_imported(tmp_path: Path) -> None:
    # Launch time: PyYAML is only needed to read a file (issue 11).
    code = (
        "import sys; from pathlib import Path; from engine.config import load_config;"
        f"load_config(None, home=Path({str(tmp_path)!r}), env={{}});"
        "print('yaml' in sys.modules)"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


def test_example_comments_every_key() -> None:
    for number, line in enumerate(EXAMPLE.read_text(encoding="utf-8").splitlines(), 1):
        if re.match(r"^\s*[a-z_]+:\s*\S", line):  # a key with a value, not a section header
            assert "  # " in line, f"config.example.yaml:{number} has no comment: {line}"


def test_example_shows_every_key_of_a_models_entry() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    for path, _ in named_leaves(Config):
        key = path.rsplit(".", 1)[-1]
        assert f"#     {key}: " in text or f"#       {key}: " in text, path


def test_example_mentions_env_fallbacks() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    for word in ("$OPENAI_BASE_URL", "$OPENAI_API_KEY", "${VAR}", "$TROVE_HOME"):
        assert word in text


# ----------------------------------------------------------------- mcp servers


def test_mcp_servers_read_with_env_in_headers_and_env() -> None:
    data = {
        "mcp": {
            "servers": {
                "time": {
                    "command": "uvx",
                    "args": ["mcp-server-time"],
                    "env": {"TZ": "${Z}"},
                    "allow": ["get_current_time"],
                },
                "docs": {
                    "url": "http://127.0.0.1:8765/mcp",
                    "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
                },
            }
        }
    }
    config = parse_config(data, source="c.yaml", env={"Z": "UTC", "DOCS_TOKEN": "t0k"})
    time, docs = config.mcp.servers["time"], config.mcp.servers["docs"]
    assert (time.command, time.args, time.env, time.allow) == (
        "uvx",
        ("mcp-server-time",),
        {"TZ": "UTC"},
        ("get_current_time",),
    )
    assert docs.url == "http://127.0.0.1:8765/mcp"
    assert docs.headers == {"Authorization": "Bearer t0k"}


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ({}, "c.yaml: mcp.servers.x: needs a command (stdio) or a url (streamable HTTP)"),
        (
            {"command": "a", "url": "http://h/mcp"},
            "c.yaml: mcp.servers.x: has both command and url",
        ),
        ({"url": "ftp://h"}, "c.yaml: mcp.servers.x.url: expected an http:// or https:// URL"),
        ({"command": "a", "args": "b"}, "c.yaml: mcp.servers.x.args: expected a list of strings"),
        ({"command": "a", "allow": [1]}, "c.yaml: mcp.servers.x.allow: expected a list of strings"),
        ({"command": "a", "cmd": 1}, "c.yaml: unknown key 'mcp.servers.x.cmd'"),
    ],
)
def test_a_bad_mcp_server_is_one_line(server: dict, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"mcp": {"servers": {"x": server}}}, source="c.yaml", env={})
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)
