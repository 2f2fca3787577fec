"""Checking config data against declared msgspec Structs, with one-line errors.

engine.config declares each key once as an `Annotated[type, Meta(...)]` field; this module
reads those declarations and checks data against them: msgspec checks types and
constraints, and the error's wording ("expected an integer >= 1, got boolean true") is
derived from the same constraints. It also expands ${VAR} references and suggests the
nearest key for an unknown one, so every error names the file and the dotted key path.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Annotated, Any, Literal, NamedTuple, NoReturn, TypeVar, get_args, get_origin

import msgspec
from msgspec import Meta, Struct

from engine.config.errors import ConfigError, quote

__all__ = [
    "ConfigError",
    "Leaf",
    "Named",
    "accepts",
    "check",
    "describe",
    "leaf",
    "leaves",
    "named_leaves",
    "quote",
]

_INVALID = object()  # "this value is not acceptable"
_S = TypeVar("_S", bound=Struct)
NOT_KEYS = frozenset({"source"})  # Struct fields that say where a config came from


# --------------------------------------------------------------------------- declarations


class Leaf(NamedTuple):
    """One key as read from its declaration."""

    type: Any  # the declared type without `| None`: what msgspec checks
    nullable: bool
    expected: str
    description: str
    check: Callable[[Any], bool] | None
    yaml_bools: tuple[str, str] | None


def _read_leaf(annotation: Any) -> Leaf:
    args = get_args(annotation)
    nullable = type(None) in args and get_origin(annotation) is not Annotated
    if nullable:
        (annotation,) = (arg for arg in args if arg is not type(None))
    base, meta = get_args(annotation)  # every key is Annotated[type, Meta(...)]
    extra: dict[str, Any] = meta.extra or {}
    return Leaf(
        annotation,
        nullable,
        extra.get("expected") or _expected(base, meta),
        meta.description or "",
        extra.get("check"),
        extra.get("yaml_bools"),
    )


def _expected(base: Any, meta: Meta) -> str:
    """What a value must be, in the user's words, from the declared type and constraints."""
    if base is bool:
        return "true or false"
    if base is int:
        low, high = meta.ge, meta.le
        return f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
    if base is float:
        return f"a number > {meta.gt}" + ("" if meta.le is None else f" and <= {meta.le}")
    if base is str and meta.min_length == 1:
        return "a non-empty string"
    if get_origin(base) is Literal:
        return "one of " + ", ".join(repr(choice) for choice in get_args(base))
    raise TypeError(f"no wording for a key of type {base!r}: declare extra={{'expected': ...}}")


class Named(NamedTuple):
    """A key whose value maps names the user chooses to sections of one kind (`models:`),
    declared as `Annotated[dict[str, SomeSection], Meta(...)]`."""

    section: type[Struct]
    leaf: Leaf
    """The key as a whole: its description, and what it must be, for errors."""


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""A name under a Named key: what the user types after --model, so no spaces or quotes."""


def _named_section(annotation: Any) -> type[Struct] | None:
    """The section type of `Annotated[dict[str, Section], ...]`, else None."""
    if get_origin(annotation) is not Annotated:
        return None
    base = get_args(annotation)[0]
    if get_origin(base) is not dict:
        return None
    value = get_args(base)[1]
    return value if isinstance(value, type) and issubclass(value, Struct) else None


@cache
def _keys(cls: type[Struct]) -> dict[str, Leaf | Named | type[Struct]]:
    """The keys of one section: a leaf, a nested section or named sections per name, in
    declared order.

    Read on first use, not at import, so a launch pays only for what it parses.
    """
    keys: dict[str, Leaf | Named | type[Struct]] = {}
    for info in msgspec.structs.fields(cls):
        if info.name in NOT_KEYS:
            continue
        kind = info.type
        named = _named_section(kind)
        if named is not None:
            keys[info.name] = Named(named, _read_leaf(kind))
        elif isinstance(kind, type) and issubclass(kind, Struct):
            keys[info.name] = kind
        else:
            keys[info.name] = _read_leaf(kind)
    return keys


def leaf(cls: type[Struct], name: str) -> Leaf:
    """The declaration of one key of a section."""
    spec = _keys(cls)[name]
    if not isinstance(spec, Leaf):
        raise TypeError(f"{cls.__name__}.{name} is a section, not a key")
    return spec


def leaves(cls: type[Struct], prefix: str = "") -> Iterator[tuple[str, Leaf]]:
    """Every key under `cls` with its dotted path, in declared order."""
    for name, spec in _keys(cls).items():
        if isinstance(spec, Leaf):
            yield _join(prefix, name), spec
        elif isinstance(spec, Named):
            yield _join(prefix, name), spec.leaf  # its sections' keys: `named_leaves`
        else:
            yield from leaves(spec, _join(prefix, name))


def named_leaves(cls: type[Struct]) -> Iterator[tuple[str, Leaf]]:
    """Every key of the sections under each Named key of `cls`, as `key.*.leaf`."""
    for name, spec in _keys(cls).items():
        if isinstance(spec, Named):
            yield from leaves(spec.section, f"{name}.*")
        elif not isinstance(spec, Leaf):
            yield from ((f"{name}.{path}", leaf) for path, leaf in named_leaves(spec))


def _accept(spec: Leaf, value: object) -> object:
    """The value as the key's type, or _INVALID; msgspec checks the declared constraints."""
    if isinstance(value, bool) and spec.yaml_bools is not None:
        value = spec.yaml_bools[0] if value else spec.yaml_bools[1]
    try:
        result = msgspec.convert(value, spec.type, strict=True)
    except msgspec.ValidationError:
        return _INVALID
    if isinstance(result, float) and not math.isfinite(result):
        return _INVALID
    if spec.check is not None and not spec.check(result):
        return _INVALID
    return result


def accepts(spec: Leaf, value: object) -> bool:
    """Whether `value` is acceptable for the key as it is (no ${VAR}, no null)."""
    return _accept(spec, value) is not _INVALID


# --------------------------------------------------------------------------- checking


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def describe(value: object) -> str:
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
        return f"string {quote(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"{type(value).__name__} {quote(str(value))}"


# ${NAME} or ${NAME:-default}; $${ is a literal "${"; any other "${" is malformed.
_REFERENCE = re.compile(r"\$(\$)\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{")


class _Context:
    """Where errors are reported, where ${VAR} values come from, and the whole schema."""

    def __init__(self, source: str, env: Mapping[str, str], root: type[Struct]) -> None:
        self.source = source
        self.env = env
        self.root = root

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
                    f"string {quote(raw)}",
                )
            value = self.env.get(name, "")
            if not value and match.group(3) is not None:
                return match.group(3)
            return value

        return _REFERENCE.sub(substitute, raw)


def _value(spec: Leaf, value: object, path: str, ctx: _Context) -> object:
    got = describe(value)
    expanded_from_env = False
    if isinstance(value, str):
        expanded = ctx.expand(value, path)
        if expanded != value:
            expanded_from_env = True
            got = f"{describe(expanded)} (from {quote(value)})"
        value = expanded
        if value == "" and spec.nullable:
            return None  # `api_key: ${UNSET}` means "not set", not "the empty key"
    elif isinstance(value, dict):  # env: and headers: take ${VAR} in their values
        value = {
            k: ctx.expand(v, f"{path}.{k}") if isinstance(v, str) else v for k, v in value.items()
        }
    elif isinstance(value, list):
        value = [ctx.expand(v, path) if isinstance(v, str) else v for v in value]
    expected = spec.expected + (" or null" if spec.nullable else "")
    if value is None:
        if spec.nullable:
            return None
        ctx.fail(path, expected, got)
    result = _accept(spec, value)
    if result is _INVALID and expanded_from_env:
        # The environment can only hold text, so `context_window: ${CTX}` must still be
        # able to give a number: read an expanded value as a YAML scalar and try again.
        from engine.config.reader import yaml_scalar

        result = _accept(spec, yaml_scalar(str(value)))
    if result is _INVALID:
        ctx.fail(path, expected, got)
    return result


def _unknown_key(
    key: object, prefix: str, siblings: Mapping[str, object], ctx: _Context
) -> NoReturn:
    import difflib  # only on this error path

    name = str(key)
    message = f"{ctx.source}: unknown key {quote(_join(prefix, name))}"
    close = difflib.get_close_matches(name, list(siblings), n=1)
    if close:
        hint = _join(prefix, close[0])
    else:
        # A key placed in the wrong section (`name:` at the top) is a common slip.
        paths = [path for path, _ in leaves(ctx.root)]
        by_leaf = {path.rsplit(".", 1)[-1]: path for path in reversed(paths)}
        close = difflib.get_close_matches(name, list(by_leaf), n=1)
        hint = by_leaf[close[0]] if close else ""
    if hint:
        message += f" (did you mean {quote(hint)}?)"
    raise ConfigError(message)


def _section(data: object, prefix: str, cls: type[_S], ctx: _Context) -> _S:
    if data is None:
        # A section whose keys are all commented out reads as null: treat it as empty.
        data = {}
    if not isinstance(data, dict):
        ctx.fail(prefix or "top level", "a mapping", describe(data))
    keys = _keys(cls)
    values: dict[str, object] = {}
    for key, value in data.items():
        spec = keys.get(key) if isinstance(key, str) else None
        if spec is None:
            _unknown_key(key, prefix, keys, ctx)
        path = _join(prefix, key)
        if isinstance(spec, Leaf):
            values[key] = _value(spec, value, path, ctx)
        elif isinstance(spec, Named):
            values[key] = _named(value, path, spec, ctx)
        else:
            values[key] = _section(value, path, spec, ctx)
    return cls(**values)


def _named(data: object, prefix: str, spec: Named, ctx: _Context) -> dict[str, Struct]:
    """A Named key's value: each name (checked) with its section (checked as any other)."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        ctx.fail(prefix, spec.leaf.expected, describe(data))
    out: dict[str, Struct] = {}
    for name, section in data.items():
        if not isinstance(name, str) or not NAME.fullmatch(name):
            ctx.fail(
                prefix,
                "names of 1-64 characters from A-Z a-z 0-9 . _ - (not starting with . _ -)",
                f"the name {describe(name)}",
            )
        out[name] = _section(section, _join(prefix, name), spec.section, ctx)
    return out


def check(data: object, root: type[_S], *, source: str, env: Mapping[str, str]) -> _S:
    """`data` (loaded YAML, None for none) as a `root`, or a ConfigError naming `source`."""
    return _section(data, "", root, _Context(source, env, root))
