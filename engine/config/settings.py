"""Trove's configuration: one optional YAML file, validated strictly, with env fallbacks.

Over 400 lines as one file on purpose: every key of the config, read side by side.

Every key is declared once, below, as a field of a frozen msgspec Struct: its type,
its default, and one `_key(...)` Meta with its description (config.example.yaml
carries the same text; a test holds them equal) and its rules. schema.py checks data
against these declarations and words every error from the same rules.

Strict, because a mistyped key that silently falls back to its default costs more
than an error: every problem is a one-line ConfigError naming the file, the key path
and what was expected. reader.py reads a file, and PyYAML is imported only for one
beyond the plain subset (plain.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import msgspec
from msgspec import Meta, Struct, field

from engine.config.errors import ConfigError
from engine.config.mcp import McpConfig, check_servers
from engine.config.schema import accepts, check, describe, leaf, leaves


def _http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _key(description: str, **rules: Any) -> Meta:
    """A key's documentation and rules: msgspec's constraints (ge, le, gt, min_length,
    pattern) and, in `extra`, what they cannot say: `expected` words the error when the
    rule is not self-explanatory, `check` is one more test of the value, and `yaml_bools`
    maps YAML 1.1's bare on/off (read as true/false) back to choice names.
    """
    return Meta(description=description, **rules)


class ModelConfig(Struct, frozen=True):
    """Which chat endpoint to talk to; one code path serves remote and local backends."""

    provider: Annotated[
        Literal["openai", "local", "auto"],
        _key(
            "openai | local | auto (auto: the endpoint when base_url/api_key or"
            " $OPENAI_API_KEY/$OPENAI_BASE_URL is set, else the local model if the local extra"
            " is installed; --local forces local)"
        ),
    ] = "auto"
    base_url: (
        Annotated[
            str,
            _key(
                "OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1;"
                " null = $OPENAI_BASE_URL, else OpenAI's",
                extra={"expected": "an http:// or https:// URL", "check": _http_url},
            ),
        ]
        | None
    ) = None
    api_key: (
        Annotated[
            str,
            _key("e.g. ${DEEPSEEK_API_KEY}; null = $OPENAI_API_KEY when set", min_length=1),
        ]
        | None
    ) = None
    name: Annotated[str, _key("model name sent to the endpoint", min_length=1)] = "gpt-4o-mini"
    context_window: Annotated[int, _key("tokens the model accepts (>= 1)", ge=1)] = 128000
    max_retries: Annotated[int, _key("retries of a failed request, 0..10", ge=0, le=10)] = 2
    timeout: Annotated[
        float,
        _key(
            "seconds to wait for the server to send anything, before the reply"
            " starts or mid-reply (> 0)",
            gt=0,
        ),
    ] = 600.0
    connect_timeout: Annotated[
        float,
        _key(
            "seconds to wait for a connection to the server, apart from model.timeout (> 0)",
            gt=0,
        ),
    ] = 3.0
    max_tokens: (
        Annotated[
            int,
            _key("cap on tokens per reply (>= 1); null = the endpoint's default", ge=1),
        ]
        | None
    ) = None
    tools: Annotated[
        Literal["auto", "on", "off"],
        _key(
            "auto | on | off: whether the model is offered task_note/history_search/history_read",
            extra={"yaml_bools": ("on", "off")},
        ),
    ] = "auto"
    max_tool_rounds: Annotated[
        int,
        _key(
            "rounds of tool calls in one turn; a model that asks for more has its"
            " turn ended with a notice (>= 1)",
            ge=1,
        ),
    ] = 16
    default: (
        Annotated[
            str,
            _key(
                "which models: entry to start with unless --model or $TROVE_MODEL names"
                " one; null = the first",
                min_length=1,
            ),
        ]
        | None
    ) = None

    def __repr__(self) -> str:
        # Kept out of repr so logging or printing a config never leaks the key.
        return f"ModelConfig({', '.join(f'{k}={v!r}' for k, v in self.__rich_repr__())})"

    def __rich_repr__(self) -> list[tuple[str, Any]]:
        return [(name, getattr(self, name)) for name in self.__struct_fields__ if name != "api_key"]


_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*\Z"


class ModelEntry(Struct, frozen=True):
    """One named model of `models:`, to switch to with --model, /model or $TROVE_MODEL.

    A key left out is `model:`'s, except the key: an entry with a base_url of its own
    never gets `model:`'s key (nor $OPENAI_API_KEY), so a key goes only where it was
    configured to go (engine.config.models).
    """

    base_url: (
        Annotated[
            str,
            _key(
                "its endpoint; null = model.base_url",
                extra={"expected": "an http:// or https:// URL", "check": _http_url},
            ),
        ]
        | None
    ) = None
    api_key: Annotated[str, _key("its key, e.g. ${DEEPSEEK_API_KEY}", min_length=1)] | None = None
    api_key_env: (
        Annotated[
            str,
            _key(
                "the environment variable that holds its key, e.g. DEEPSEEK_API_KEY",
                pattern=_ENV_NAME,
                extra={"expected": "an environment variable's name (A-Z a-z 0-9 _)"},
            ),
        ]
        | None
    ) = None
    name: (
        Annotated[str, _key("model id sent to the endpoint; null = the entry's name", min_length=1)]
        | None
    ) = None
    context_window: (
        Annotated[int, _key("tokens it accepts (>= 1); null = model.context_window", ge=1)] | None
    ) = None
    max_tokens: (
        Annotated[int, _key("cap on tokens per reply (>= 1); null = model.max_tokens", ge=1)] | None
    ) = None
    tools: (
        Annotated[
            Literal["auto", "on", "off"],
            _key("auto | on | off; null = model.tools", extra={"yaml_bools": ("on", "off")}),
        ]
        | None
    ) = None

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.__rich_repr__())
        return f"ModelEntry({shown})"

    def __rich_repr__(self) -> list[tuple[str, Any]]:
        return [(name, getattr(self, name)) for name in self.__struct_fields__ if name != "api_key"]


class CompactionConfig(Struct, frozen=True):
    """When and how the context window is summarised."""

    auto: Annotated[bool, _key("compact automatically when the context gets full")] = True
    threshold: Annotated[
        float,
        _key(
            "fraction of model.context_window that triggers it, before a request (0 < x <= 1)",
            gt=0,
            le=1,
        ),
    ] = 0.8
    keep_recent_tokens: Annotated[
        int, _key("newest tokens kept verbatim, never summarised (>= 0)", ge=0)
    ] = 8000
    model: (
        Annotated[str, _key("a separate summary model; null = model.name", min_length=1)] | None
    ) = None


class TaskContinuityConfig(Struct, frozen=True):
    """Bounds on what compaction archives, so capture stays fast and the store bounded."""

    enabled: Annotated[
        bool,
        _key("archive compacted history so you and the model can search and read it"),
    ] = True
    max_batches: Annotated[
        int, _key("compacted batches kept; the oldest expire first (>= 1)", ge=1)
    ] = 32
    max_records_per_batch: Annotated[int, _key("messages archived per compaction (>= 1)", ge=1)] = (
        256
    )
    max_record_chars: Annotated[
        int,
        _key("characters kept per archived message; longer ones are marked truncated (>= 1)", ge=1),
    ] = 16000


class LocalConfig(Struct, frozen=True):
    """The in-process offline model behind the `local` extra."""

    model_path: (
        Annotated[
            str,
            _key("model file for the offline `local` extra; null = none", min_length=1),
        ]
        | None
    ) = None
    threads: (
        Annotated[
            int,
            _key("CPU threads for the local model (>= 1); null = automatic", ge=1),
        ]
        | None
    ) = None
    context: Annotated[int, _key("the local model's context size in tokens (>= 256)", ge=256)] = (
        3072
    )
    """Smaller than 4,096: the KV cache is most of the offline model's private memory,
    and compaction keeps a long chat inside the smaller window."""
    max_tokens: Annotated[
        int,
        _key(
            "cap on tokens per offline reply, so a tiny model cannot loop for long;"
            " model.max_tokens overrides it (>= 16)",
            ge=16,
        ),
    ] = 320
    repeat_penalty: Annotated[
        float,
        _key("llama.cpp's penalty on recently used tokens; 1.0 = off (>= 1.0)", ge=1.0),
    ] = 1.15
    frequency_penalty: Annotated[
        float,
        _key("penalty growing with how often a token was used; 0.0 = off (>= 0.0)", ge=0.0),
    ] = 0.2


class UiConfig(Struct, frozen=True):
    """Front-end preferences; the engine only carries them."""

    theme: Annotated[str, _key("any Textual theme name", min_length=1)] = "textual-dark"
    max_width: (
        Annotated[
            int,
            _key(
                "columns the transcript's messages wrap at on wider terminals (>= 0);"
                " 0 or null = the whole width",
                ge=0,
            ),
        ]
        | None
    ) = 100


class Config(Struct, frozen=True):
    """The whole configuration; `source` says which file it came from (None: defaults)."""

    model: ModelConfig = field(default_factory=ModelConfig)
    models: Annotated[
        dict[str, ModelEntry],
        _key(
            "named models to switch between (--model NAME, /model, $TROVE_MODEL);"
            " see the example below",
            extra={"expected": "a mapping of names to models"},
        ),
    ] = field(default_factory=dict)
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    task_continuity: TaskContinuityConfig = field(default_factory=TaskContinuityConfig)
    local: LocalConfig = field(default_factory=LocalConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    user_id: Annotated[
        str,
        _key(
            "your data lives in $TROVE_HOME/users/<user_id>; 1-64 of A-Z a-z 0-9 . _ -",
            pattern=r"^(?!\.\.?\Z)[A-Za-z0-9._-]{1,64}\Z",  # a directory name that cannot climb
            extra={
                "expected": "1-64 characters from A-Z a-z 0-9 . _ - other than '.' or '..'"
                " (it names a directory)"
            },
        ),
    ] = "local"
    source: Path | None = None  # where it was read from, not a key of the file

    def with_user(self, user_id: str) -> Config:
        """The same config for another user (`--user` overrides the file)."""
        return msgspec.structs.replace(self, user_id=user_id)


def key_descriptions() -> dict[str, str]:
    """Every key's dotted path and its description, in declared order (the example's text)."""
    return {path: spec.description for path, spec in leaves(Config)}


def valid_user_id(value: object) -> bool:
    """Whether `--user` names an acceptable user_id (the same rule as the file's key)."""
    return accepts(leaf(Config, "user_id"), value)


def _env_fallback(model: ModelConfig, source: str, env: Mapping[str, str]) -> ModelConfig:
    """Fill base_url/api_key from OPENAI_* like the openai package would, but visibly."""
    changes: dict[str, str] = {}
    if model.base_url is None and (url := env.get("OPENAI_BASE_URL")):
        spec = leaf(ModelConfig, "base_url")
        if not accepts(spec, url):
            got = f"{describe(url)} (from $OPENAI_BASE_URL)"
            raise ConfigError(f"{source}: model.base_url: expected {spec.expected}, got {got}")
        changes["base_url"] = url
    if model.api_key is None and (key := env.get("OPENAI_API_KEY")):
        changes["api_key"] = key
    return msgspec.structs.replace(model, **changes) if changes else model


def parse_config(data: object, *, source: str, env: Mapping[str, str] | None = None) -> Config:
    """Turn already-loaded YAML data into a Config, separate from I/O so tests stay pure.

    `source` is only used to name the file in error messages; the returned Config's
    `source` is None (load_config fills it in).
    """
    env = os.environ if env is None else env
    config = check(data, Config, source=source, env=env)
    default = config.model.default
    if default is not None and default not in config.models:
        names = ", ".join(config.models) or "none: add models: entries"
        raise ConfigError(
            f"{source}: model.default: no model {default!r} in models: (models: {names})"
        )
    check_servers(config.mcp, source)
    return msgspec.structs.replace(config, model=_env_fallback(config.model, source, env))


# --------------------------------------------------------------------------- files


def default_home() -> Path:
    """Where Trove keeps its data unless --home says otherwise."""
    value = os.environ.get("TROVE_HOME")
    if value:
        return Path(value).expanduser()
    import platformdirs  # only when no --home or $TROVE_HOME says where

    return Path(platformdirs.user_data_dir("trove", appauthor=False))


def load_config(path: Path | None, *, home: Path, env: Mapping[str, str] | None = None) -> Config:
    """Load the config the CLI asked for, or the first of `config_candidates(home)`
    (the platform's config dir, then `home`), or the defaults.

    An explicit path that does not exist is an error (a typo in --config must not
    silently mean "defaults"); no file in either place just means defaults.
    """
    env = os.environ if env is None else env
    if path is None:
        from engine.config.places import config_candidates, find_config

        path = find_config(config_candidates(home))
        if path is None:
            return parse_config(None, source="(no config file)", env=env)
    else:
        path = Path(path)
        try:
            present = path.exists()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
        if not present:
            raise ConfigError(f"{path}: no such config file")
    from engine.config.reader import read_yaml  # PyYAML only when there is a file to read

    source = str(path)
    config = parse_config(read_yaml(path, source), source=source, env=env)
    return msgspec.structs.replace(config, source=path)
