"""The plain config reader gives exactly PyYAML's data, or hands the file to PyYAML.

engine.config.plain reads the subset of YAML nearly every config is written
in, so a launch with a config file does not import PyYAML (about 20 ms). Its
one duty is never to differ: for every text it accepts, the strict loader
must give the same data, type for type (True is not 1, 1 is not 1.0), and a
text the strict loader refuses must never be accepted. These tests compare
the two on config.example.yaml and on thousands of generated documents built
from the spellings YAML 1.1 reads in surprising ways.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine.config import load_config
from engine.config.plain import parse_plain, plain_scalar
from engine.config.reader import yaml_scalar
from engine.config.yaml_reader import _StrictLoader
from engine.config.yaml_reader import yaml_scalar as pyyaml_scalar

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "config.example.yaml"

VALUES = [
    "gpt-4o-mini", "http://127.0.0.1:11434/v1", "${OPENAI_API_KEY}", "${X:-fallback}", "$${",
    "textual-dark", "a:b", "a:", "a: b", "a #b", "a#b", "#x", "local", "ab.c_d", "x=y", "a,b",
    "yes", "no", "Yes", "NO", "on", "Off", "y", "n", "true", "True", "TRUE", "false", "FALSE",
    "null", "Null", "NULL", "~", "", "0", "-0", "7", "-7", "012", "08", "0x1F", "0b11", "0o7",
    "1_000", "+1", "1e3", "1.0e3", "1.0e+3", ".5", "5.", "0.8", "-1.5", "600.0", "1.", "01.5",
    ".inf", "-.inf", ".nan", "1:30", "2025-01-01", "2025-01-01T10:00:00Z", "<<", "=", "&a",
    "*a", "!x", "!!str 1", "|", ">", "[1, 2]", "{a: 1}", "-", "- a", "?", "%", "@x", "`x",
    '"a b"', "'x'", '"it\'s"', "'it''s'", '"a\\"b"', '"\\u0041"', "''", '""', '"a" "b"',
    "'a' # c", '"#"', "é", "naïve", "a\tb", "a b", "  padded", "a ", "x" * 3, "a{b}", "a[b]",
    "a&b", "a*b", "a!b", "a?b", "a|b", "a>b", "a%b", "a@b", "a'b", 'a"b', "a`b", "a~b",
]  # fmt: skip
ORDINARY = [
    "gpt-4o-mini", "http://127.0.0.1:11434/v1", "${OPENAI_API_KEY}", "textual-dark", "local",
    "true", "false", "null", "", "0", "7", "-7", "128000", "0.8", "600.0", '"a b"', "'x'",
]  # fmt: skip
"""Values as configs hold them: most documents are then plain, and compared."""
KEYS = [
    "model", "name", "base_url", "a", "_x", "x1", "on", "off", "yes", "no", "y", "n", "true",
    "null", "Null", "True", "1", "a-b", "a.b", "é", '"q"', "'q'", "<<", "? k", "k k",
]  # fmt: skip
COMMENTS = ["", " # note", "  #", " #", "  # a: b"] * 4 + ["\t# tab", "#glued"]


def strict(text: str) -> object:
    return yaml.load(text, Loader=_StrictLoader)


def same(a: object, b: object) -> bool:
    """Equal and of the same types all the way down (True == 1 and 1 == 1.0 in Python)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))  # type: ignore[arg-type]


def key(rng: random.Random, taken: set[str]) -> str:
    """A key new to its mapping nine times in ten (a repeated one PyYAML refuses)."""
    pool = [k for k in KEYS[:6] if k not in taken] if rng.random() < 0.9 else []
    chosen = rng.choice(pool) if pool and rng.random() < 0.8 else rng.choice(KEYS)
    taken.add(chosen)
    return chosen


def document(rng: random.Random) -> str:
    """A few nested mappings of the generator's keys, values, comments and layouts."""
    lines: list[str] = []
    sections: set[str] = set()
    wild = rng.random() < 0.5  # else the layout is sound and only the words are tricky
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.2:
            lines.append(rng.choice(["", "# a comment", "   ", "  # indented comment"]))
        lines.append(f"{key(rng, sections)}:{rng.choice(COMMENTS) if rng.random() < 0.3 else ''}")
        indent = " " * rng.choice([2, 2, 2, 4, 1, 3])
        keys: set[str] = set()
        for _ in range(rng.randint(0, 4)):
            value = rng.choice(ORDINARY if rng.random() < 0.7 else VALUES)
            space = rng.choice([" "] * 12 + ["  ", "", "\t"]) if wild else " "
            comment = rng.choice(COMMENTS if wild else COMMENTS[:5]) if rng.random() < 0.3 else ""
            at = indent if not wild or rng.random() < 0.95 else rng.choice(["", " ", indent * 2])
            lines.append(f"{at}{key(rng, keys)}:{space}{value}{comment}")
            if value == "" or (wild and rng.random() < 0.03):  # a mapping one level deeper
                lines.append(f"{at}  {rng.choice(KEYS[:6])}: {rng.choice(ORDINARY)}")
    end = rng.choice(["\n", "\n", "\r\n", "\r"])
    return end.join(lines) + rng.choice(["", end])


def test_the_example_config_is_read_without_pyyaml_and_as_pyyaml_reads_it() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    plain = parse_plain(text)
    assert plain is not None
    assert same(plain, strict(text))


@pytest.mark.parametrize("seed", range(4))
def test_every_generated_document_it_accepts_reads_the_same_in_pyyaml(seed: int) -> None:
    rng = random.Random(seed)
    accepted = refused_by_yaml = 0
    for _ in range(1500):
        text = document(rng)
        plain = parse_plain(text)
        try:
            data = strict(text)
        except yaml.YAMLError:
            assert plain is None, text  # never accept what PyYAML refuses
            refused_by_yaml += 1
            continue
        if plain is not None:
            assert same(plain, data), (text, plain, data)
            accepted += 1
    assert accepted > 120 and refused_by_yaml > 200  # both sides of the line were exercised


@pytest.mark.parametrize("value", VALUES)
def test_a_scalar_it_knows_is_the_scalar_pyyaml_reads(value: str) -> None:
    known, plain = plain_scalar(value)
    if known:
        assert same(plain, yaml.safe_load(value)), value
    assert same(yaml_scalar(value), pyyaml_scalar(value))  # the environment's values


def test_a_plain_config_file_is_loaded_without_importing_pyyaml(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from engine.config import load_config;"
        f"c = load_config(Path({str(EXAMPLE)!r}), home=Path({str(tmp_path)!r}), env={{}});"
        "print('yaml' in sys.modules, c.model.name)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "gpt-4o-mini"]


def test_a_file_beyond_the_subset_still_gets_pyyamls_line_and_message(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("model:\n  name: a\n  name: b\n", encoding="utf-8")
    with pytest.raises(Exception, match=r"config.yaml:3: duplicate key 'name'"):
        load_config(path, home=tmp_path, env={})
    path.write_text("model:\n  name: my model  # spaces: PyYAML reads it\n", encoding="utf-8")
    assert load_config(path, home=tmp_path, env={}).model.name == "my model"
