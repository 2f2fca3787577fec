"""Trove's configuration: one optional YAML file, validated strictly, with env fallbacks.

Validation is strict because a mistyped key that silently falls back to its default
costs users far more time than an error does. Every problem becomes a ConfigError
whose text is one line naming the file, the dotted key path and what was expected,
so any front end can print it and exit 2 without a traceback.
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

import platformdirs
import yaml

__all__ = [
    "CompactionConfig",
    "Config",
    "ConfigError",
    "LocalConfig",
    "ModelConfig",
    "TaskContinuityConfig",
    "UiConfig",
    "default_home",
    "load_config",
    "parse_config",
]


class ConfigError(Exception):
    """A bad config, told in exactly one line so the CLI can print it and exit 2.

    The text is '<file>: <key.path>: expected <what>, got <what>' for values, or
    '<file>:<line>: <problem>' for YAML syntax errors. Line breaks that sneak in
    (from a file name or a value) are folded so the one-line promise always holds.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.splitlines()))


@dataclass(frozen=True)
class ModelConfig:
    """Which chat endpoint to talk to; one code path serves remote and local backends."""

    provider: str = "auto"
    base_url: str | None = None
    # Kept out of repr so logging or printing a config never leaks the key.
    api_key: str | None = field(default=None, repr=False)
    name: str = "gpt-4o-mini"
    context_window: int = 128000
    max_retries: int = 2
    timeout: float = 600.0
    max_tokens: int | None = None
    tools: str = "auto"
    max_tool_rounds: int = 16


@dataclass(frozen=True)
class CompactionConfig:
    """When and how the context window is summarised."""

    auto: bool = True
    threshold: float = 0.8
    keep_recent_tokens: int = 8000
    model: str | None = None


@dataclass(frozen=True)
class TaskContinuityConfig:
    """Bounds on what compaction archives, so capture stays fast and the store bounded."""

    enabled: bool = True
    max_batches: int = 32
    max_records_per_batch: int = 256
    max_record_chars: int = 16000


@dataclass(frozen=True)
class LocalConfig:
    """The in-process offline model behind the `local` extra."""

    model_path: str | None = None
    threads: int | None = None
    context: int = 4096


@dataclass(frozen=True)
class UiConfig:
    """Front-end preferences; the engine only carries them."""

    theme: str = "textual-dark"


@dataclass(frozen=True)
class Config:
    """The whole configuration; `source` says which file it came from (None: defaults)."""

    model: ModelConfig = field(default_factory=ModelConfig)
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    task_continuity: TaskContinuityConfig = field(default_factory=TaskContinuityConfig)
    local: LocalConfig = field(default_factory=LocalConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    user_id: str = "local"
    source: Path | None = None

    def with_user(self, user_id: str) -> Config:
        """The same config for another user (`--user` overrides the file)."""
        return replace(self, user_id=user_id)


# --------------------------------------------------------------------------- schema

_INVALID = object()  # a converter's "this value is not acceptable"


@dataclass(frozen=True)
class _Field:
    """One leaf: what to tell the user it should be, and how to accept a value."""

    expected: str
    convert: Callable[[object], object]
    nullable: bool = False


@dataclass(frozen=True)
class _Section:
    """A nested mapping that becomes one of the dataclasses above."""

    cls: type
    fields: Mapping[str, _Field]


def _is_int(value: object) -> bool:
    # bool is a subclass of int in Python, but `true` is never a count in a config.
    return isinstance(value, int) and not isinstance(value, bool)


def _integer(minimum: int, maximum: int | None = None) -> _Field:
    expected = (
        f"an integer >= {minimum}" if maximum is None else f"an integer from {minimum} to {maximum}"
    )

    def convert(value: object) -> object:
        if not _is_int(value):
            return _INVALID
        assert isinstance(value, int)
        if value < minimum or (maximum is not None and value > maximum):
            return _INVALID
        return value

    return _Field(expected, convert)


def _number(*, above: float, at_most: float | None = None) -> _Field:
    expected = f"a number > {above}" + ("" if at_most is None else f" and <= {at_most}")

    def convert(value: object) -> object:
        if not (_is_int(value) or isinstance(value, float)):
            return _INVALID
        number = float(value)  # type: ignore[arg-type]
        if not math.isfinite(number) or number <= above:
            return _INVALID
        if at_most is not None and number > at_most:
            return _INVALID
        return number

    return _Field(expected, convert)


def _boolean(value: object) -> object:
    return value if isinstance(value, bool) else _INVALID


def _text(value: object) -> object:
    return value if isinstance(value, str) and value else _INVALID


def _choice(*choices: str, booleans: tuple[str, str] | None = None) -> _Field:
    """An enum; `booleans` maps YAML 1.1's bare on/off (read as true/false) back to names."""

    def convert(value: object) -> object:
        if isinstance(value, bool) and booleans is not None:
            return booleans[0] if value else booleans[1]
        return value if isinstance(value, str) and value in choices else _INVALID

    return _Field("one of " + ", ".join(repr(c) for c in choices), convert)


def _url(value: object) -> object:
    if not isinstance(value, str):
        return _INVALID
    try:
        parts = urlsplit(value)
    except ValueError:
        return _INVALID
    return value if parts.scheme in ("http", "https") and parts.netloc else _INVALID


_USER_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def valid_user_id(value: object) -> bool:
    """It becomes a directory name under users/, so it must not climb or be empty."""
    return isinstance(value, str) and bool(_USER_ID.fullmatch(value)) and value not in (".", "..")


def _user_id(value: object) -> object:
    return value if valid_user_id(value) else _INVALID


_NON_EMPTY = "a non-empty string"
_URL = _Field("an http:// or https:// URL", _url, nullable=True)

_SCHEMA: dict[str, _Section | _Field] = {
    "model": _Section(
        ModelConfig,
        {
            "provider": _choice("openai", "local", "auto"),
            "base_url": _URL,
            "api_key": _Field(_NON_EMPTY, _text, nullable=True),
            "name": _Field(_NON_EMPTY, _text),
            "context_window": _integer(1),
            "max_retries": _integer(0, 10),
            "timeout": _number(above=0),
            "max_tokens": replace(_integer(1), nullable=True),
            "tools": _choice("auto", "on", "off", booleans=("on", "off")),
            "max_tool_rounds": _integer(1),
        },
    ),
    "compaction": _Section(
        CompactionConfig,
        {
            "auto": _Field("true or false", _boolean),
            "threshold": _number(above=0, at_most=1),
            "keep_recent_tokens": _integer(0),
            "model": _Field(_NON_EMPTY, _text, nullable=True),
        },
    ),
    "task_continuity": _Section(
        TaskContinuityConfig,
        {
            "enabled": _Field("true or false", _boolean),
            "max_batches": _integer(1),
            "max_records_per_batch": _integer(1),
            "max_record_chars": _integer(1),
        },
    ),
    "local": _Section(
        LocalConfig,
        {
            "model_path": _Field(_NON_EMPTY, _text, nullable=True),
            "threads": replace(_integer(1), nullable=True),
            "context": _integer(256),
        },
    ),
    "ui": _Section(UiConfig, {"theme": _Field(_NON_EMPTY, _text)}),
    "user_id": _Field(
        "1-64 characters from A-Z a-z 0-9 . _ - other than '.' or '..' (it names a directory)",
        _user_id,
    ),
}


def _leaf_paths(schema: Mapping[str, _Section | _Field], prefix: str = "") -> list[str]:
    paths: list[str] = []
    for key, spec in schema.items():
        path = _join(prefix, key)
        if isinstance(spec, _Section):
            paths.extend(_leaf_paths(spec.fields, path))
        else:
            paths.append(path)
    return paths


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


_ALL_LEAVES = _leaf_paths(_SCHEMA)

# --------------------------------------------------------------------------- parsing


def _quote(text: str, limit: int = 60) -> str:
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return repr(text)


def _describe(value: object) -> str:
    """Name a value the way YAML users think of it ('boolean true', not 'True')."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {_quote(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"{type(value).__name__} {_quote(str(value))}"


# ${NAME} or ${NAME:-default}; $${ is a literal "${"; any other "${" is malformed.
_REFERENCE = re.compile(r"\$(\$)\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{")


class _Context:
    """Where errors are reported and where ${VAR} values come from."""

    def __init__(self, source: str, env: Mapping[str, str]) -> None:
        self.source = source
        self.env = env

    def fail(self, path: str, expected: str, got: str) -> NoReturn:
        raise ConfigError(f"{self.source}: {path}: expected {expected}, got {got}")

    def expand(self, raw: str, path: str) -> str:
        def substitute(match: re.Match[str]) -> str:
            if match.group(1):
                return "${"
            name = match.group(2)
            if name is None:
                self.fail(
                    path,
                    "${NAME} or ${NAME:-default} (write $${ for a literal ${)",
                    f"string {_quote(raw)}",
                )
            value = self.env.get(name, "")
            if not value and match.group(3) is not None:
                return match.group(3)
            return value

        return _REFERENCE.sub(substitute, raw)


def _leaf(spec: _Field, value: object, path: str, ctx: _Context) -> object:
    got = _describe(value)
    expanded_from_env = False
    if isinstance(value, str):
        expanded = ctx.expand(value, path)
        if expanded != value:
            expanded_from_env = True
            got = f"{_describe(expanded)} (from {_quote(value)})"
        value = expanded
        if value == "" and spec.nullable:
            return None  # `api_key: ${UNSET}` means "not set", not "the empty key"
    expected = spec.expected + (" or null" if spec.nullable else "")
    if value is None:
        if spec.nullable:
            return None
        ctx.fail(path, expected, got)
    result = spec.convert(value)
    if result is _INVALID and expanded_from_env:
        # The environment can only hold text, so `context_window: ${CTX}` must still be
        # able to give a number: read an expanded value as a YAML scalar and try again.
        result = spec.convert(_scalar(value))
    if result is _INVALID:
        ctx.fail(path, expected, got)
    return result


def _scalar(text: str) -> object:
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, bool | int | float) else text


def _unknown_key(
    key: object, prefix: str, siblings: Mapping[str, object], ctx: _Context
) -> NoReturn:
    name = str(key)
    message = f"{ctx.source}: unknown key {_quote(_join(prefix, name))}"
    close = difflib.get_close_matches(name, list(siblings), n=1)
    if close:
        hint = _join(prefix, close[0])
    else:
        # A key placed in the wrong section (`name:` at the top) is a common slip.
        by_leaf = {path.rsplit(".", 1)[-1]: path for path in reversed(_ALL_LEAVES)}
        close = difflib.get_close_matches(name, list(by_leaf), n=1)
        hint = by_leaf[close[0]] if close else ""
    if hint:
        message += f" (did you mean {_quote(hint)}?)"
    raise ConfigError(message)


def _mapping(
    data: object, prefix: str, schema: Mapping[str, _Section | _Field], ctx: _Context
) -> dict[str, object]:
    if data is None:
        # A section whose keys are all commented out reads as null: treat it as empty.
        data = {}
    if not isinstance(data, dict):
        ctx.fail(prefix or "top level", "a mapping", _describe(data))
    values: dict[str, object] = {}
    for key, value in data.items():
        spec = schema.get(key) if isinstance(key, str) else None
        if spec is None:
            _unknown_key(key, prefix, schema, ctx)
        path = _join(prefix, key)
        if isinstance(spec, _Section):
            values[key] = spec.cls(**_mapping(value, path, spec.fields, ctx))
        else:
            values[key] = _leaf(spec, value, path, ctx)
    return values


def _env_fallback(model: ModelConfig, ctx: _Context) -> ModelConfig:
    """Fill base_url/api_key from OPENAI_* like the openai package would, but visibly."""
    changes: dict[str, str] = {}
    if model.base_url is None and (url := ctx.env.get("OPENAI_BASE_URL")):
        if _url(url) is _INVALID:
            ctx.fail(
                "model.base_url",
                _URL.expected,
                f"{_describe(url)} (from $OPENAI_BASE_URL)",
            )
        changes["base_url"] = url
    if model.api_key is None and (key := ctx.env.get("OPENAI_API_KEY")):
        changes["api_key"] = key
    return replace(model, **changes) if changes else model


def parse_config(data: object, *, source: str, env: Mapping[str, str] | None = None) -> Config:
    """Turn already-loaded YAML data into a Config, separate from I/O so tests stay pure.

    `source` is only used to name the file in error messages; the returned Config's
    `source` is None (load_config fills it in).
    """
    ctx = _Context(source, os.environ if env is None else env)
    values = _mapping(data, "", _SCHEMA, ctx)
    config = Config(**values)  # type: ignore[arg-type]
    return replace(config, model=_env_fallback(config.model, ctx))


# --------------------------------------------------------------------------- files


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys, which plain YAML silently collapses.

    A second `model:` section would otherwise throw away the first without a word.
    """

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[object, object]:
        if isinstance(node, yaml.MappingNode):
            seen: set[object] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:
                    continue
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"duplicate key {_quote(str(key))}",
                        key_node.start_mark,
                    )
        return super().construct_mapping(node, deep=deep)


def _read_yaml(path: Path, source: str) -> object:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read config file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{source}:{line}: not valid UTF-8") from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context and problem.startswith("but "):
            problem = f"{exc.context}, {problem}"  # "expected a single document …, but found …"
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise ConfigError(f"{where}: {problem}") from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        raise ConfigError(
            f"{source}:{line}: character #x{exc.character:04x} is not allowed in YAML"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{source}: YAML nested too deeply") from None


def default_home() -> Path:
    """Where Trove keeps its data unless --home says otherwise."""
    value = os.environ.get("TROVE_HOME")
    if value:
        return Path(value).expanduser()
    return Path(platformdirs.user_data_dir("trove", appauthor=False))


def load_config(path: Path | None, *, home: Path, env: Mapping[str, str] | None = None) -> Config:
    """Load the config the CLI asked for, or the one in `home`, or the defaults.

    An explicit path that does not exist is an error (a typo in --config must not
    silently mean "defaults"); a missing home/config.yaml just means defaults.
    """
    env = os.environ if env is None else env
    if path is None:
        candidate = Path(home) / "config.yaml"
        try:
            present = candidate.exists() or candidate.is_symlink()
        except OSError as exc:
            raise ConfigError(f"{candidate}: cannot read config file: {exc.strerror}") from None
        if not present:
            return parse_config(None, source="(no config file)", env=env)
        path = candidate
    else:
        path = Path(path)
        try:
            present = path.exists()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
        if not present:
            raise ConfigError(f"{path}: no such config file")
    source = str(path)
    config = parse_config(_read_yaml(path, source), source=source, env=env)
    return replace(config, source=path)
