"""F1 teaches every key where it works, and toasts never cover the prompt.

The key test reads every binding declared in the tui package (not the help's own list of
widgets), so a key added with a description fails here until F1 shows it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import pytest
from textual.binding import Binding
from textual.dom import DOMNode

import tui
from tests.tui.conftest import settle, type_text, until
from tui.widgets.prompt_input import PromptInput


def _described_bindings() -> list[tuple[str, Binding]]:
    """(class name, binding) for every binding a tui class declares with something to say."""
    found: list[tuple[str, Binding]] = []
    for module in pkgutil.walk_packages(tui.__path__, "tui."):
        loaded = importlib.import_module(module.name)
        for _, cls in inspect.getmembers(loaded, inspect.isclass):
            if not issubclass(cls, DOMNode) or cls.__module__ != loaded.__name__:
                continue
            for item in cls.__dict__.get("BINDINGS", []):
                binding = item if isinstance(item, Binding) else Binding(*item)
                if binding.tooltip or binding.description:
                    found.append((cls.__qualname__, binding))
    return found


def _rows(text: str) -> list[tuple[list[str], str]]:
    """The help's key rows as (its keys, what they do)."""
    rows = []
    for line in text.splitlines():
        keys, sep, what = line.partition("  ")
        if sep:
            rows.append((keys.split(" / "), what))
    return rows


async def _help_text(app: Any, pilot: Any) -> str:
    from tui.screens.help import HelpScreen

    await pilot.press("f1")
    await until(pilot, lambda: isinstance(app.screen, HelpScreen))
    return str(app.screen.text)


async def test_every_described_binding_in_the_tui_is_in_f1(app_factory):
    from tui.screens.help import key_label

    bindings = _described_bindings()
    # The walk finds the widgets of every context, not only the help's own list.
    names = {name for name, _ in bindings}
    assert {"ToolBlock", "ThinkingBlock", "QueueList", "ConsentScreen", "ReaderTab"} <= names
    app = app_factory()
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        rows = _rows(await _help_text(app, pilot))
    missing = []
    for name, binding in bindings:
        what = binding.tooltip or binding.description.lower()
        keys = key_label(binding.key).split(" / ")
        if not any(set(keys) <= set(shown) and done == what for shown, done in rows):
            missing.append(f"{name}: {binding.key} ({what})")
    assert not missing, "keys F1 does not show: " + "; ".join(missing)


async def test_f1_says_what_each_key_does_where_it_works(app_factory):
    """Each context has its heading and its keys under it: the transcript's scrolling, a
    block's Enter, the queue's keys, and each inspector tab's Enter."""
    app = app_factory()
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        text = await _help_text(app, pilot)

    def under(heading: str) -> str:
        start = text.index(heading + "\n") + len(heading) + 1
        ends = [i for i in (text.find("\nKeys", start), text.find("\nInspector:", start)) if i > 0]
        return text[start : min(ends, default=len(text))]

    assert "PgUp" in under("Keys in the transcript") and "PgDn" in under("Keys in the transcript")
    assert "scroll the transcript" in under("Keys in the transcript")
    blocks = under("Keys on a block in the transcript")
    assert "Enter  on a tool call: show or hide its arguments and result in full" in blocks
    assert "Enter  on a thinking block: show or hide the model's thinking" in blocks
    queue = under("Keys in the queue (Tab from the prompt)")
    assert "Delete / Backspace  remove" in queue and "e / Enter  edit" in queue
    assert "Enter  in the box: search" in under("Inspector: Search tab")
    assert "Enter  on a result: read it in the Reader" in under("Inspector: Search tab")
    assert "Enter  on a batch: list its sources" in under("Inspector: Batches tab")
    assert "Enter  on a citation" in under("Inspector: Notes tab")
    assert "n / Esc  no" in under("Keys in a yes/no question")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.parametrize("lines", [1, 8])
async def test_a_toast_never_covers_the_prompt(app_factory, size, lines):
    app = app_factory()
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        if lines > 1:
            await type_text(pilot, "line")
            for _ in range(lines - 1):
                await pilot.press("shift+enter")
                await type_text(pilot, "line")
        for n in range(4):
            app.notify(f"toast {n}: " + "a long notice that wraps over lines " * 3, timeout=60)
        await until(pilot, lambda: len(app.screen.query("Toast")) == 4)
        await pilot.pause()
        prompt = app.query_one(PromptInput)
        assert prompt.region.height >= min(lines, 8)
        toasts = list(app.screen.query("Toast"))
        shown = [app.screen.find_widget(toast).visible_region for toast in toasts]
        assert shown[0].height > 0  # the first toast is on screen
        for region in shown:
            assert not region.intersection(prompt.region).area, (region, prompt.region)
