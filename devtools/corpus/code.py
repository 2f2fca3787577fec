"""Source code as it appears in fenced blocks: Python, TypeScript, Rust and JSON.

Each language is a `Language`: a head (imports, an opening brace), units (a function,
a class, a record; `small` ones of a line or two to fill the last few tokens), a padding
line that adds exactly one token per word, and a tail. The Python parses with `ast` and
the JSON with `json`; the others are shaped by hand and only need to look like code to a
highlighter.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

NOUNS = (
    "record", "buffer", "entry", "path", "items", "result", "count", "limit", "offset",
    "chunk", "line", "key", "value", "payload", "session", "event", "index", "timeout",
    "retries", "batch", "cursor", "header", "token", "window", "reply", "thread",
)  # fmt: skip
VERBS = (
    "load", "parse", "read", "write", "merge", "split", "check", "fetch", "flush", "build",
    "render", "apply", "collect", "resolve", "encode", "decode", "scan", "trim",
)  # fmt: skip


def _name(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"


def _camel(rng: random.Random) -> str:
    noun = rng.choice(NOUNS)
    return rng.choice(VERBS) + noun[0].upper() + noun[1:]


def _type_name(rng: random.Random) -> str:
    return "".join(part.capitalize() for part in (rng.choice(NOUNS), rng.choice(NOUNS)))


def _comment(marker: str, words: int) -> str:
    """A comment line of `words` words after `marker`: each word is one more token."""
    return marker + "".join(f" {('end', 'of', 'file')[i % 3]}" for i in range(words)) + "\n"


@dataclass(frozen=True)
class Language:
    name: str
    head: Callable[[int], str]
    """The opening lines of a block of so many tokens (a short block gets fewer)."""
    unit: Callable[[random.Random, bool], str]
    pad: Callable[[int], str]
    tail: str = ""


# -- Python -------------------------------------------------------------------------------


def _py_expr(rng: random.Random) -> str:
    a, b = rng.choice(NOUNS), rng.choice(NOUNS)
    return rng.choice(
        (
            f"{a} + {rng.randint(1, 64)}",
            f"len({a}) - {b}",
            f"[{b}.strip() for {b} in {a} if {b}]",
            f"{{k: v for k, v in {a}.items() if v is not None}}",
            f'f"{{{a}!r}} is {{len({b})}} long"',
            f"{a}.get({b!r}, {rng.randint(0, 9)})",
            f"min({a}, {b} * 2)",
            f"{_name(rng)}({a}, {b}={rng.choice(('True', 'False', 'None'))})",
            f"'{rng.choice(VERBS)}:{a}'.split(':')",
        )
    )


def _py_block(rng: random.Random, indent: int, depth: int) -> list[str]:
    pad = "    " * indent
    roll = rng.random()
    a, b = rng.choice(NOUNS), rng.choice(NOUNS)
    if depth < 2 and roll < 0.16:
        lines = [f"{pad}if {a} is None or {b} > {rng.randint(0, 100)}:"]
        lines += _py_body(rng, indent + 1, depth + 1, 1, 3)
        if rng.random() < 0.4:
            lines += [f"{pad}else:", *_py_body(rng, indent + 1, depth + 1, 1, 2)]
        return lines
    if depth < 2 and roll < 0.3:
        return [f"{pad}for {a} in {b}:", *_py_body(rng, indent + 1, depth + 1, 1, 3)]
    if depth < 2 and roll < 0.38:
        return [
            f"{pad}try:",
            *_py_body(rng, indent + 1, depth + 1, 1, 2),
            f"{pad}except (KeyError, ValueError) as exc:",
            f'{pad}    raise RuntimeError(f"cannot {rng.choice(VERBS)} {{exc}}") from exc',
        ]
    if roll < 0.5:
        return [f"{pad}# {rng.choice(VERBS)} the {a} before the {b}", f"{pad}{a} = {_py_expr(rng)}"]
    if roll < 0.62:
        return [f"{pad}{_name(rng)}({a}, {b})"]
    if roll < 0.7:
        return [f'{pad}log.debug("%s: %d {a}s", {b}, len({a}))']
    return [f"{pad}{a} = {_py_expr(rng)}"]


def _py_body(rng: random.Random, indent: int, depth: int, low: int, high: int) -> list[str]:
    lines: list[str] = []
    for _ in range(rng.randint(low, high)):
        lines += _py_block(rng, indent, depth)
    return lines


def _py_unit(rng: random.Random, small: bool) -> str:
    if small:
        return f"{rng.choice(NOUNS).upper()}_{rng.choice(NOUNS).upper()} = {rng.randint(0, 999)}\n"
    if rng.random() < 0.25:
        cls = _type_name(rng)
        fields = [f"    {n}: {rng.choice(('int', 'str', 'float', 'list[str]'))}" for n in NOUNS[:4]]
        methods: list[str] = []
        for _ in range(rng.randint(1, 3)):
            methods += [
                "",
                f"    def {_name(rng)}(self, {rng.choice(NOUNS)}: int = 0) -> bool:",
                f'        """{rng.choice(VERBS).capitalize()} the {rng.choice(NOUNS)}."""',
                *_py_body(rng, 2, 1, 1, 4),
                f"        return self.{rng.choice(NOUNS[:4])} > 0",
            ]
        return "\n".join(["@dataclass", f"class {cls}:", *fields, *methods]) + "\n\n\n"
    params = ", ".join(f"{n}: int" for n in rng.sample(NOUNS, rng.randint(1, 3)))
    lines = [f"def {_name(rng)}({params}) -> dict[str, int]:"]
    lines.append(f'    """{rng.choice(VERBS).capitalize()} each {rng.choice(NOUNS)}, in order."""')
    lines += _py_body(rng, 1, 0, 1, 7)
    lines.append(f"    return {{'{rng.choice(NOUNS)}': {rng.randint(0, 9)}}}")
    return "\n".join(lines) + "\n\n\n"


PYTHON = Language(
    name="python",
    head=lambda n: (
        '"""Helpers for the session store."""\n\n'
        "from __future__ import annotations\n\n"
        "import logging\n"
        "from dataclasses import dataclass\n\n"
        "log = logging.getLogger(__name__)\n\n\n"
        if n >= 300
        else ""
    ),
    unit=_py_unit,
    pad=lambda words: _comment("#", words),
)


# -- TypeScript ---------------------------------------------------------------------------


def _ts_unit(rng: random.Random, small: bool) -> str:
    if small:
        return f"export const {rng.choice(NOUNS).upper()}_LIMIT = {rng.randint(0, 999)};\n"
    name, a, b = _camel(rng), rng.choice(NOUNS), rng.choice(NOUNS)
    if rng.random() < 0.3:
        kind = _type_name(rng)
        fields = [
            f"  {n}{'?' if rng.random() < 0.3 else ''}: "
            f"{rng.choice(('string', 'number', 'boolean', 'string[]'))};"
            for n in rng.sample(NOUNS, 4)
        ]
        return "\n".join([f"export interface {kind} {{", *fields, "}"]) + "\n\n"
    body = [
        f"export async function {name}({a}: string, {b}: number = {rng.randint(1, 50)})"
        ": Promise<number> {",
        f"  // {rng.choice(VERBS)} the {a} first",
        f"  const response = await fetch(`/api/${{{a}}}?limit=${{{b}}}`);",
        "  if (!response.ok) {",
        f"    throw new Error(`cannot {rng.choice(VERBS)} ${{{a}}}: ${{response.status}}`);",
        "  }",
        f"  const {b}List = (await response.json()) as Array<{{ id: string; size: number }}>;",
    ]  # fmt: skip
    for _ in range(rng.randint(1, 4)):
        c = rng.choice(NOUNS)
        loop = [f"  for (const {c} of {b}List) {{", f"    total += {c}.size * {rng.randint(2, 9)};"]
        keep = f"x.size > {rng.randint(0, 99)}"
        body += rng.choice(
            (
                [*loop, "  }"],
                [f"  const {c}Ids = {b}List.filter((x) => {keep}).map((x) => x.id);"],
                ["  try {", f"    await {_camel(rng)}({a});", "  } catch (err) {"]
                + ["    console.warn(err);", "  }"],
            )
        )
    body.insert(2, "  let total = 0;")
    return "\n".join([*body, "  return total;", "}"]) + "\n\n"


TYPESCRIPT = Language(
    name="typescript",
    head=lambda n: 'import { readFile } from "node:fs/promises";\n\n',
    unit=_ts_unit,
    pad=lambda words: _comment("//", words),
)


# -- Rust ---------------------------------------------------------------------------------


def _rs_unit(rng: random.Random, small: bool) -> str:
    if small:
        return f"const {rng.choice(NOUNS).upper()}_MAX: usize = {rng.randint(0, 999)};\n"
    kind, a, b = _type_name(rng), rng.choice(NOUNS), rng.choice(NOUNS)
    lines = [
        f"/// A {a} and the {b}s it owns.",
        "#[derive(Debug, Clone, PartialEq)]",
        f"pub struct {kind} {{",
        f"    pub {a}: String,",
        f"    pub {b}s: Vec<u64>,",
        "}",
        "",
        f"impl {kind} {{",
    ]
    for _ in range(rng.randint(1, 3)):
        lines += [
            f"    pub fn {_name(rng)}(&mut self, limit: usize) -> Result<usize, Error> {{",
            f"        let mut total = {rng.randint(0, 9)};",
            f"        for (i, {b}) in self.{b}s.iter().enumerate().take(limit) {{",
            f"            match {b} % {rng.randint(2, 7)} {{",
            f"                0 => total += *{b} as usize,",
            "                _ if i > limit / 2 => break,",
            f'                _ => return Err(Error::new(format!("bad {b} {{}}", {b}))),',
            "            }",
            "        }",
            f"        self.{a}.push_str(&total.to_string());",
            "        Ok(total)",
            "    }",
        ]
    return "\n".join([*lines, "}"]) + "\n\n"


RUST = Language(
    name="rust",
    head=lambda n: "use std::collections::HashMap;\nuse std::io::Error;\n\n",
    unit=_rs_unit,
    pad=lambda words: _comment("//", words),
)


# -- JSON ---------------------------------------------------------------------------------


def _json_unit(rng: random.Random, small: bool) -> str:
    if small:
        return f'    {{"id": {rng.randint(1, 99999)}}},\n'
    tags = ", ".join(f'"{t}"' for t in rng.sample(NOUNS, rng.randint(1, 4)))
    return (
        "    {\n"
        f'      "id": {rng.randint(1, 99999)},\n'
        f'      "name": "{_name(rng)}",\n'
        f'      "enabled": {rng.choice(("true", "false"))},\n'
        f'      "size": {rng.randint(0, 10**6)},\n'
        f'      "tags": [{tags}],\n'
        f'      "owner": {{"team": "{rng.choice(NOUNS)}", "score": {rng.random():.3f}}}\n'
        "    },\n"
    )


JSON = Language(
    name="json",
    head=lambda n: '{\n  "version": 3,\n  "records": [\n',
    unit=_json_unit,
    # The last record closes the list, so the units before it may all end with a comma.
    pad=lambda words: (
        '    {"id": 0}\n  ],\n  "note": "checksum'
        + "".join(f" {('end', 'of', 'data')[i % 3]}" for i in range(words))
        + '"\n'
    ),
    tail="}\n",
)

LANGUAGES = {lang.name: lang for lang in (PYTHON, TYPESCRIPT, RUST, JSON)}
