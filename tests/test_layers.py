"""The house's layers: every import (module level, inside a function, or for types only)
goes up a layer or stays in its own folder, and no modules import each other round a
circle. The layers, top to bottom, are LAYERS below; a reader finds the room for a
behaviour from the folder names alone."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "tui", "cli", "devtools")

LAYERS: list[tuple[str, ...]] = [
    ("engine.events", "engine.errors", "engine.port"),  # the engine's contract
    ("engine.util",),
    ("engine.config",),
    ("engine.log",),
    ("engine.surface",),
    ("engine.threads",),
    ("engine.model",),
    ("engine.mcp",),
    ("engine.driver",),
    ("engine.compaction",),
    ("engine.continuity.archive",),
    ("engine.continuity.search",),
    ("engine.continuity.context",),
    ("engine.continuity.notes",),
    ("engine.continuity",),
    ("engine.workspace",),
    ("engine.runtime",),
    ("engine",),
    (
        "tui.messages",
        "tui.typed",
        "tui.clipboard",
        "tui.code_lexers",
        "tui.drawn_lines",
        "tui.ui_state",
    ),
    (
        "tui.startup.collection",
        "tui.startup.geometry_caches",
        "tui.startup.strip_caches",
        "tui.startup.strip_cycles",
        "tui.startup.full_map",
        "tui.startup.switching",
        "tui.startup.opening",
    ),
    ("tui.live",),
    ("tui.widgets",),
    ("tui.inspector",),
    ("tui.bridge", "tui.actions"),
    ("tui.screens",),
    ("tui.app",),
    ("tui.startup.run",),
    ("tui",),
    ("cli",),
    ("devtools",),
]
"""Top to bottom: a module may import its own layer and the layers above it."""


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(module imported, line) for every import of Trove's own modules in `path`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    yield _known(alias.name, known), node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                child = f"{target}.{alias.name}"
                yield (child if child in known else _known(target, known)), node.lineno


def _known(name: str, known: dict[str, Path]) -> str:
    while name not in known and "." in name:
        name = name.rpartition(".")[0]
    return name


def layer(name: str) -> int:
    """The index of the most specific layer `name` belongs to."""
    best, depth = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = index, len(prefix)
    assert best >= 0, f"{name} is in no layer: add it to LAYERS"
    return best


def test_every_module_is_in_a_layer() -> None:
    for name in modules():
        layer(name)


def test_every_layer_names_modules() -> None:
    """A stale entry (a module moved or gone) would let a misplaced one slip in."""
    known = modules()
    empty = [
        prefix
        for prefixes in LAYERS
        for prefix in prefixes
        if not any(name == prefix or name.startswith(prefix + ".") for name in known)
    ]
    assert not empty, f"layers naming no module: {empty}"


def test_imports_only_go_up() -> None:
    known = modules()
    wrong = []
    for name, path in sorted(known.items()):
        here = layer(name)
        for target, line in imports(name, path, known):
            if layer(target) > here:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {name} imports {target} below it")
    assert not wrong, "\n".join(wrong)


def test_no_import_circles() -> None:
    known = modules()
    graph = {
        name: {t for t, _ in imports(name, path, known) if t != name}
        for name, path in known.items()
    }
    circles = _circles(graph)
    assert not circles, "\n".join(" -> ".join(sorted(c)) for c in circles)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found
