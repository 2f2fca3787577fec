"""Reading a config file: the plain subset by hand, anything else by PyYAML.

A module of its own so that nothing about YAML is imported before there is a
file to read (engine.config imports this lazily), and PyYAML (engine.config.yaml_reader)
only for a file beyond the plain subset (engine.config.plain) that nearly
every config is written in: the two give the same data for such a file.
"""

from __future__ import annotations

from pathlib import Path

from engine.config.errors import ConfigError
from engine.config.plain import parse_plain, plain_scalar


def read_yaml(path: Path, source: str) -> object:
    """The file's YAML data, or a ConfigError naming `source` and the line at fault."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read config file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{source}:{line}: not valid UTF-8") from None
    data = parse_plain(text)
    if data is not None:
        return data
    from engine.config.yaml_reader import load_yaml

    return load_yaml(text, source)


def yaml_scalar(text: str) -> object:
    """Text from the environment read as a YAML scalar ('32000' -> 32000), else the text."""
    known, value = plain_scalar(text)
    if not known:
        from engine.config.yaml_reader import yaml_scalar as read

        return read(text)
    return value if isinstance(value, bool | int | float) else text
