"""PyYAML's reading of a config file: duplicate keys refused, errors in one line.

Imported only for a file the plain reader (engine.config.plain) does not
recognise, or an environment value it cannot read as a scalar: PyYAML is slow
to import.
"""

from __future__ import annotations

import yaml

from engine.config.errors import ConfigError, quote


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


def load_yaml(text: str, source: str) -> object:
    """The text's YAML data, or a ConfigError naming `source` and the line at fault."""
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
    """Text read as a YAML scalar ('32000' -> 32000), else the text."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, bool | int | float) else text
