"""The inspector's Search tab "All threads" switch (issue 13 point 2).

F3 (or the switch) searches every thread of the user off the UI loop; hits
are grouped under each thread's title and date; Enter reads a hit from its
own thread in the Reader, whose `o` then switches the app to that thread.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList

from tests.test_search_all import made
from tests.tui.conftest import settle, type_text, until
from tui.inspector.reader_tab import ReaderTab
from tui.inspector.search_tab import SearchTab

SIZE = (100, 32)
CODE = "KITE-5520"


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def plant(home: Path, *, dated: bool = False) -> None:
    made(home, "local", "20250101-000000-old", f"Remember the kite code {CODE} for spring")
    made(home, "local", "20250102-000000-mid", "Nothing here", f"the {CODE} came back")
    made(home, "someone", "20250103-000000-theirs", f"their {CODE}")
    if dated:  # fixed times (the groups show each thread's date): the same in every snapshot
        for day, thread in ((1, "20250101-000000-old"), (2, "20250102-000000-mid")):
            log = home / "users" / "local" / "threads" / thread / "session.jsonl"
            stamp = f'"ts":"2025-01-0{day}T09:30:00.000Z"'.encode()
            log.write_bytes(re.sub(rb'"ts":"[^"]*"', stamp, log.read_bytes()))


async def search_everywhere(pilot: Pilot[Any], max_threads: int | None = None) -> SearchTab:
    await settle(pilot)  # the app's own thread is open
    await pilot.press("ctrl+o")
    await settle(pilot)
    if max_threads is not None:
        pilot.app.query_one(SearchTab).max_threads = max_threads
    await pilot.press("f2")  # Batches → Search
    await settle(pilot)
    await pilot.press("f3")  # the "All threads" switch
    await type_text(pilot, CODE)
    await pilot.press("enter")
    tab = pilot.app.query_one(SearchTab)
    await pilot.app.workers.wait_for_complete()  # the search runs in a worker thread
    await until(pilot, lambda: bool(tab.groups))
    await settle(pilot)
    return tab


async def test_the_switch_groups_hits_by_thread_reads_one_and_opens_its_thread(
    app_factory: Any, tmp_path: Any
) -> None:
    plant(tmp_path / "home")
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        tab = await search_everywhere(pilot)
        assert tab.all_threads
        assert [g["thread"] for g in tab.groups] == ["20250102-000000-mid", "20250101-000000-old"]
        assert tab.threads == ["20250102-000000-mid", "20250101-000000-old"]
        await pilot.press("enter")  # the first hit: read from its own thread
        reader = app.query_one(ReaderTab)
        await until(pilot, lambda: reader.page is not None)
        assert CODE in reader.page["text"] and reader.thread == "20250102-000000-mid"
        assert reader.check_action("open_thread", ()) is True
        await pilot.press("o")
        await until(
            pilot,
            lambda: app.runtime is not None and app.runtime.thread.id == "20250102-000000-mid",
        )


def test_inspector_search_all_threads(snap_compare: Any, app_factory: Any, tmp_path: Path) -> None:
    """F3 and a search for the kite code: the switch on, "matches in 2 threads", each group
    under its thread's title and date (newest first: the one where the code came back in an
    active message, then the old thread whose archived first prompt holds it), never the
    other user's thread."""
    plant(tmp_path / "home", dated=True)

    async def run_before(pilot: Pilot[Any]) -> None:
        await search_everywhere(pilot)

    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=run_before)


async def test_an_answer_that_stopped_says_so_and_its_last_row_searches_the_rest(
    app_factory: Any, tmp_path: Any
) -> None:
    """The status says how many threads were left; the last row of the list searches them."""
    plant(tmp_path / "home")
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        tab = await search_everywhere(pilot, max_threads=1)
        assert [g["thread"] for g in tab.groups] == ["20250102-000000-mid"]
        status = str(tab.query_one("#search-status").render())
        assert "in 1 of" in status and "1 older thread not searched" in status
        listing = tab.query_one("#search-results", OptionList)
        last = listing.get_option_at_index(listing.option_count - 1)
        assert last.id == "more" and "1 older thread" in str(last.prompt)
        listing.highlighted = listing.option_count - 1
        await pilot.press("enter")
        await pilot.app.workers.wait_for_complete()
        await until(pilot, lambda: len(tab.groups) == 2)
        assert [g["thread"] for g in tab.groups] == ["20250102-000000-mid", "20250101-000000-old"]
        status = str(tab.query_one("#search-status").render())
        assert "in 2 of" in status and "not searched" not in status
        assert tab.max_threads == 1  # the next query is limited again
        last = listing.get_option_at_index(listing.option_count - 1)
        assert last.id != "more"


def test_inspector_search_all_threads_stopped(
    snap_compare: Any, app_factory: Any, tmp_path: Path
) -> None:
    """An answer stopped at one thread with matches: the status says one older thread was
    not searched, and the list's last row offers to search it too."""
    plant(tmp_path / "home", dated=True)

    async def run_before(pilot: Pilot[Any]) -> None:
        await search_everywhere(pilot, max_threads=1)

    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=run_before)
