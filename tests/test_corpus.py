"""The benchmark corpus (devtools/corpus): the same text on every run, of the sizes its
names give, and Markdown of the shape it claims (fences that close, real tables and lists).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from devtools.corpus import SPECS, Spec, count, reply, split

ROOT = Path(__file__).resolve().parent.parent
MARKDOWN = MarkdownIt("commonmark").enable("table")


def digest() -> str:
    whole = hashlib.sha256()
    for spec in SPECS:
        whole.update(reply(spec.name).encode())
    return whole.hexdigest()


def test_the_same_text_in_another_process_with_another_hash_seed() -> None:
    code = "from tests.test_corpus import digest; print(digest())"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    other = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert other.stdout.strip() == digest()


def fences(tokens: list[Token]) -> list[Token]:
    return [t for t in tokens if t.type == "fence"]


def kinds(tokens: list[Token]) -> set[str]:
    found = {t.type for t in tokens}
    found |= {child.type for t in tokens for child in t.children or ()}
    return found


def closed_fences(text: str) -> bool:
    """Every fence line opens a block that a later bare fence line closes."""
    open_ = False
    for line in text.splitlines():
        if line.startswith("```"):
            if open_ and line != "```":
                return False
            open_ = not open_
    return not open_


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_each_reply_is_of_its_size_and_shape(spec: Spec) -> None:
    text = reply(spec.name)
    assert "".join(split(text)) == text
    assert text[-1] == "." and closed_fences(text)  # ends on a visible token, outside code
    tokens = MARKDOWN.parse(text)
    blocks = fences(tokens)
    if spec.kind == "code":
        (block,) = blocks
        assert block.info == spec.language
        assert count(block.content) == spec.size
        assert tokens[-1].type == "paragraph_close"  # the closing words come after the block
        if spec.language == "python":
            ast.parse(block.content)
        if spec.language == "json":
            json.loads(block.content)
        return
    assert len(split(text)) == spec.size
    assert "code_inline" in kinds(tokens)
    if spec.language == "lists":
        assert {"bullet_list_open", "ordered_list_open"} <= kinds(tokens)
    if spec.language == "tables":
        assert "table_open" in kinds(tokens)
    if spec.kind == "mixed":
        assert {"table_open", "bullet_list_open", "ordered_list_open"} <= kinds(tokens)
        assert {block.info for block in blocks} >= {"python", "typescript", "rust", "json"}
        assert max(count(block.content) for block in blocks) >= 4000
        for block in blocks:
            if block.info == "python":
                ast.parse(block.content)
            if block.info == "json":
                json.loads(block.content)


def test_every_table_is_a_table_with_as_many_cells_in_each_row_as_in_its_header() -> None:
    text = reply("tables-1000") + "\n\n" + reply("mixed-20000")
    groups: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.startswith("|"):
            groups[-1].append(line)
        elif groups[-1]:
            groups.append([])
    tables = [group for group in groups if group]
    assert len(tables) > 2
    for rows in tables:
        assert len(rows) > 2 and len({row.count("|") for row in rows}) == 1
        assert re.fullmatch(r"\|( :?-+:? \|)+", rows[1])
    parsed = [t for t in MARKDOWN.parse(text) if t.type == "table_open"]
    assert len(parsed) == len(tables)
