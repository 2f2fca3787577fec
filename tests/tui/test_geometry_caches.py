"""Textual's geometry memo caches are bounded small, and still answer the same."""

from __future__ import annotations

from textual.geometry import Region, Spacing

from tui.startup import geometry_caches
from tui.startup.geometry_caches import BOUND, bound_geometry_caches


def _cached_methods() -> dict[str, object]:
    return {n: m for n, m in vars(Region).items() if callable(getattr(m, "cache_info", None))}


def test_each_region_cache_keeps_at_most_the_bound_and_answers_as_before() -> None:
    a, b = Region(0, 0, 10, 10), Region(5, 5, 10, 10)
    before = _cached_methods()
    assert len(before) >= 5  # Textual memoizes Region's arithmetic
    expected = (a.intersection(b), a.union(b), a.grow((1, 2, 3, 4)), a.overlaps(b))
    bound_geometry_caches()
    after = _cached_methods()
    assert after.keys() == before.keys()
    assert {m.cache_info().maxsize for m in after.values()} == {BOUND}  # type: ignore[attr-defined]
    assert (a.intersection(b), a.union(b), a.grow((1, 2, 3, 4)), a.overlaps(b)) == expected
    assert a.shrink(Spacing(1, 1, 1, 1)) == Region(1, 1, 8, 8)
    for _ in range(3):
        for x in range(BOUND * 2):  # many one-off regions, as a scroll makes
            Region(x, 0, 3, 3).intersection(a)
    assert Region.intersection.cache_info().currsize <= BOUND


def test_bounding_twice_keeps_the_first_caches(monkeypatch) -> None:
    monkeypatch.setattr(geometry_caches, "_bounded", False)
    bound_geometry_caches()
    first = Region.union
    bound_geometry_caches(bound=8)
    assert Region.union is first and Region.union.cache_info().maxsize == BOUND
