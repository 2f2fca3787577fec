"""A drawn line is built without caches, makes each one the first time it is asked for,
and answers as Textual's own `Strip` does."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual.cache import FIFOCache
from textual.color import Color
from textual.filter import DimFilter
from textual.strip import Strip

from tui.startup import strip_caches

LINK = Style(link="x")  # one link id for every line: a new Style would draw a new one


def _line() -> Strip:
    return Strip([Segment("hello ", Style(bold=True)), Segment("world", LINK)], 11)


USES: list[Callable[[Strip], object]] = [
    lambda s: s.crop(2, 9),
    lambda s: s.crop(0, 11),
    lambda s: s.apply_style(Style(italic=True)),
    lambda s: s.apply_filter(DimFilter(), Color(0, 0, 0)),
    lambda s: s.divide([3, 11]),
    lambda s: s.adjust_cell_length(15, Style(dim=True)),
    lambda s: s.crop_extend(3, 20, Style(dim=True)),
    lambda s: s.apply_offsets(2, 5),
    lambda s: s.simplify(),
    lambda s: s.text,
    lambda s: s.cell_length,
    lambda s: s.render(Console()),
    lambda s: s.link_ids,
]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The change installed by this test alone; Textual's `Strip` as it was afterwards."""
    names = ["__init__", *strip_caches.FILLS]
    saved = {name: vars(Strip)[name] for name in names}
    if strip_caches._installed:  # installed already (another test's app): start from Textual's
        monkeypatch.setattr(Strip, "__init__", strip_caches._original_init)
        for name in strip_caches.FILLS:
            monkeypatch.setattr(Strip, name, saved[name].__wrapped__)
    monkeypatch.setattr(strip_caches, "_installed", False)
    yield
    for name, method in saved.items():
        setattr(Strip, name, method)


def _shown(result: object) -> object:
    if isinstance(result, Strip):
        return list(result)
    if isinstance(result, list):
        return [_shown(r) for r in result]
    if isinstance(result, Iterator):
        return [_shown(r) for r in result]
    return result


def test_each_answer_is_textuals(fresh: None) -> None:
    expected = [_shown(use(_line())) for use in USES]
    assert strip_caches.install()
    assert [_shown(use(_line())) for use in USES] == expected


def test_a_line_is_built_with_no_cache_and_makes_one_when_asked(fresh: None) -> None:
    assert strip_caches.install()
    line = _line()
    assert not any(isinstance(r, FIFOCache) for r in gc.get_referents(line))
    cropped = line.crop(2, 9)
    assert line.crop(2, 9) is cropped  # the crop cache, made on first use, keeps it
    caches = [r for r in gc.get_referents(line) if isinstance(r, FIFOCache)]
    assert len(caches) == 1 and caches[0]._maxsize == 16  # Textual's size for crops


def test_a_strip_it_does_not_know_is_left_as_it_is(fresh: None, monkeypatch) -> None:
    monkeypatch.setattr(strip_caches, "FIELDS", strip_caches.FIELDS | {"_new_field"})
    before = vars(Strip)["__init__"]
    assert not strip_caches.install()
    assert vars(Strip)["__init__"] is before
    assert any(isinstance(r, FIFOCache) for r in gc.get_referents(_line()))
