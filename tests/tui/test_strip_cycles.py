"""A drawn line is freed when the last holder lets go, not at the next full collection,
and `Strip` answers as Textual's own methods do."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from tui.startup import strip_cycles


def _line() -> Strip:
    return Strip([Segment("hello ", Style(bold=True)), Segment("world")], 11)


USES: list[Callable[[Strip], object]] = [
    lambda s: s.extend_cell_length(11),
    lambda s: s.extend_cell_length(15, Style(italic=True)),
    lambda s: s.extend_cell_length(4),
    lambda s: s.crop_extend(0, 11, None),
    lambda s: s.crop_extend(-2, 11, None),
    lambda s: s.crop_extend(2, 9, None),
    lambda s: s.crop_extend(3, 20, Style(dim=True)),
    lambda s: s.divide([11]),
    lambda s: s.divide(iter([11, 30])),
    lambda s: s.divide([3, 11]),
    lambda s: s.divide([]),
]


@pytest.fixture
def original() -> Iterator[dict[str, object]]:
    """Textual's methods as they were before this test installed the change."""
    saved = {name: vars(Strip)[name] for name in ("extend_cell_length", "crop_extend", "divide")}
    yield saved
    if not strip_cycles._installed:  # installed by this test alone: put them back
        for name, method in saved.items():
            setattr(Strip, name, method)


def _as_list(result: object) -> object:
    return [list(s) for s in result] if isinstance(result, list) else list(result)  # type: ignore[call-overload]


def test_each_answer_is_textuals(original: dict[str, object], monkeypatch) -> None:
    monkeypatch.setattr(strip_cycles, "_installed", False)
    for name, method in original.items():
        monkeypatch.setattr(Strip, name, method)
    expected = [_as_list(use(_line())) for use in USES]
    strip_cycles.install()
    assert [_as_list(use(_line())) for use in USES] == expected


def test_no_line_holds_itself(original, monkeypatch) -> None:
    """What refers to a line after it was padded, cropped or divided is what referred to
    it before: its caches never hold it (a cycle only a full collection frees)."""
    monkeypatch.setattr(strip_cycles, "_installed", False)
    strip_cycles.install()
    for number, use in enumerate(USES):
        line = _line()
        before = sys.getrefcount(line)
        use(line)
        assert sys.getrefcount(line) == before, number
