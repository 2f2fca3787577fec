"""Reading a config file: YAML with duplicate keys refused and one-line errors.

A module of its own so that PyYAML is imported only when there is a file to read
(engine.config imports this lazily): a launch without a config file skips it.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from engine.config_schema import ConfigError, quote


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys, which plain YAML silently collapses.

    A second `model:` section would otherwise throw away the first without a word.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[object, object]:
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
                        f"duplicate key {quote(str(key))}",
                        key_node.start_mark,
                    )
        return super().construct_mapping(node, deep=deep)


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


def yaml_scalar(text: str) -> object:
    """Text from the environment read as a YAML scalar ('32000' -> 32000), else the text."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, bool | int | float) else text
