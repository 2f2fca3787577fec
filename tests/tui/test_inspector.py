"""The archive inspector: a snapshot of every tab, and the user's path through it.

The scenario is the one from the issue's "done when": a long message with an
exact code goes into the conversation, `/compact` archives it, and the user
finds the code again in the inspector, reads it (page 2, truncated copy) and
sees the task notes with the status of each citation. Everything runs against
the scripted server through the real engine; the archive gets a fixed clock
and the process a fixed time zone so the batch times are stable.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from msgspec.structs import replace
from textual.pilot import Pilot
from textual.worker import WorkerCancelled, WorkerFailed

from devtools import scripted_server as s
from engine import events as ev
from engine.continuity import ArchiveStore, source_id
from tests.support import of_kind
from tests.tui.conftest import say, settle, type_text
from tui.app import TroveApp
from tui.inspector import ArchiveInspector
from tui.inspector.batches_tab import BatchesTab, BatchTable, SourceList
from tui.inspector.notes_tab import NoteList, NotesTab
from tui.inspector.reader_tab import ReaderTab
from tui.inspector.search_tab import ResultList, SearchBox, SearchTab
from tui.inspector.tab import InspectorTab
from tui.widgets.checkpoint_block import CheckpointBlock
from tui.widgets.key_footer import KeyFooter
from tui.widgets.prompt_input import PromptInput

SIZE = (100, 32)
CODE = "ZEBRA-4471"
RECORD_CHARS = 6000
"""The archive keeps this much of a message, so the runbook is archived truncated."""
MISSING = "r" + "0" * 32
"""A well-formed source id that no archive holds: a citation that cannot be checked."""
CAPTURED = datetime(2025, 5, 12, 17, 5, tzinfo=UTC)


def runbook() -> str:
    """About 7,000 characters with the code on the second 4,000-character page."""
    lines = [
        f"step {n:03d}: drain node-{n:03d}, patch it, and wait until its health check is green."
        for n in range(1, 88)
    ]
    lines.insert(55, f"step 055b: the deploy code for this release is {CODE}; type it at the gate.")
    return "Here is the release runbook, keep it in mind:\n" + "\n".join(lines)


RUNBOOK = runbook()


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Batch times are shown in local time: pin the zone so snapshots are stable."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def with_continuity(app: TroveApp, **fields: Any) -> TroveApp:
    """The app with task_continuity settings changed before it opens its thread."""
    app.config = replace(app.config, task_continuity=replace(app.config.task_continuity, **fields))
    return app


async def idle(pilot: Pilot[Any]) -> None:
    """Wait until no inspector read is in flight (workers, not sleeps) and the footer
    shows the keys of the focus as it is now."""
    app = pilot.app
    quiet = 0
    # A finished read posts its result, whose handler may start the next read
    # (batches → the highlighted batch's sources): only several quiet passes
    # in a row mean the pane has settled.
    while quiet < 3:
        await pilot.pause()
        pending = [w for w in app.workers if isinstance(w.node, InspectorTab) and not w.is_finished]
        if not pending and app.query_one(KeyFooter).catching_up:
            quiet = 0  # the footer is still redrawing the keys of the new focus
            continue
        if not pending:
            quiet += 1
            continue
        quiet = 0
        for worker in pending:
            with contextlib.suppress(WorkerCancelled, WorkerFailed):
                await worker.wait()
    await pilot.pause()


async def send(pilot: Pilot[Any], text: str) -> None:
    """Send a long prompt as if pasted (typing 7,000 keys would only slow the test)."""
    pilot.app.query_one(PromptInput).set_value(text)
    await pilot.press("enter")
    await settle(pilot)


async def archive_scenario(pilot: Pilot[Any], server: s.ScriptedServer) -> str:
    """Chat, compact, then a note citing the archived runbook and one citing nothing readable.

    Returns the runbook's source id.
    """
    app = pilot.app
    await settle(pilot)
    app.runtime.continuity.store.clock = lambda: CAPTURED
    server.script(
        s.text("I have read the runbook: 87 steps and a deploy code."),
        s.text("The last node is node-087."),
        s.text("The user shared a release runbook (87 node steps, a deploy code at the gate)."),
    )
    await send(pilot, RUNBOOK)
    await say(pilot, "Which node comes last?")
    await say(pilot, "/compact")
    events = app.runtime.thread.log.events
    seq = next(e.seq for e in of_kind(events, ev.UserMessage) if e.text == RUNBOOK)
    runbook_id = source_id("user", seq, RUNBOOK)
    server.script(
        s.tool_calls(
            [
                (
                    "task_note",
                    {
                        "key": "deploy-code",
                        "content": f"The release deploy code is {CODE} (runbook step 055b).",
                        "source_ids": [runbook_id],
                    },
                )
            ]
        ),
        s.text("Noted the deploy code."),
    )
    await say(pilot, "Keep a note of the deploy code.")
    # A note whose only source can no longer be read (as after a failed capture).
    app.runtime.thread.log.append(
        ev.NoteSet(
            key="staging-port",
            content="Staging listens on port 8443 (from an earlier chat).",
            source_ids=[MISSING],
        )
    )
    await settle(pilot)
    return runbook_id


async def open_inspector(pilot: Pilot[Any]) -> ArchiveInspector:
    await pilot.press("ctrl+o")
    await idle(pilot)
    return pilot.app.query_one(ArchiveInspector)


async def search_code(pilot: Pilot[Any]) -> None:
    await pilot.press("f2")  # Batches → Search
    await type_text(pilot, CODE)
    await pilot.press("enter")
    await idle(pilot)


def archived(app_factory: Any) -> TroveApp:
    return with_continuity(app_factory(), max_record_chars=RECORD_CHARS)


# -- snapshots -----------------------------------------------------------------------


def test_inspector_batches_tab(snap_compare, app_factory, server):
    """Ctrl+O after a compaction: the transcript on the left, the inspector on the right on
    its Batches tab: history "available", batch 1 (4 messages, stored, 0/1 left/cut) and its
    four sources oldest first, the 6,000-character runbook marked truncated."""

    async def run_before(pilot: Any) -> None:
        await archive_scenario(pilot, server)
        await open_inspector(pilot)

    assert snap_compare(archived(app_factory), terminal_size=SIZE, run_before=run_before)


def test_inspector_search_tab(snap_compare, app_factory, server):
    """A search for the deploy code: "3 matches", the archived runbook first with the code
    highlighted in its excerpt, then the tool result that copied it (marked as a copy made by
    the model's history tools)."""

    async def run_before(pilot: Any) -> None:
        await archive_scenario(pilot, server)
        await open_inspector(pilot)
        await search_code(pilot)

    assert snap_compare(archived(app_factory), terminal_size=SIZE, run_before=run_before)


def test_inspector_reader_page_two(snap_compare, app_factory, server):
    """Enter on the match opens the Reader on page 2 of 2 (characters 4,001-6,000), under a
    warning that the archive kept only the beginning, with the code highlighted in step 055b
    and "Previous (p)" enabled, "Next (n)" not."""

    async def run_before(pilot: Any) -> None:
        await archive_scenario(pilot, server)
        await open_inspector(pilot)
        await search_code(pilot)
        await pilot.press("enter")  # the match is on page 2: the Reader opens there
        await idle(pilot)

    assert snap_compare(archived(app_factory), terminal_size=SIZE, run_before=run_before)


def test_inspector_notes_with_an_unavailable_citation(snap_compare, app_factory, server):
    """The Notes tab: deploy-code citing the runbook ("available", Enter opens it) and
    staging-port citing a source that was never archived ("unavailable ... do not trust the
    note without re-checking")."""

    async def run_before(pilot: Any) -> None:
        await archive_scenario(pilot, server)
        await open_inspector(pilot)
        await pilot.press("f2", "f2", "f2")
        await idle(pilot)

    assert snap_compare(archived(app_factory), terminal_size=SIZE, run_before=run_before)


def test_inspector_full_screen_on_60_columns(snap_compare, app_factory, server):
    """On 60 columns the inspector takes the whole screen (no transcript beside it), its
    Batches tab wrapped to fit."""

    async def run_before(pilot: Any) -> None:
        await archive_scenario(pilot, server)
        await open_inspector(pilot)

    assert snap_compare(archived(app_factory), terminal_size=(60, 24), run_before=run_before)


def test_inspector_search_on_80_columns(snap_compare, app_factory, server):
    """80x24: the inspector takes the whole width (no 40/40 split), on its Search tab with
    the deploy code typed in the box and its matches listed below at full width; the header
    still ends with the context figure."""

    async def run_before(pilot: Any) -> None:
        await archive_scenario(pilot, server)
        await open_inspector(pilot)
        await search_code(pilot)

    assert snap_compare(archived(app_factory), terminal_size=(80, 24), run_before=run_before)


def test_inspector_with_task_continuity_off(snap_compare, app_factory):
    """task_continuity.enabled: false — the inspector shows one bordered message, "Task
    continuity is off ... nothing is archived", instead of its tabs."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await open_inspector(pilot)

    app = with_continuity(app_factory(), enabled=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


# -- pilot: the user's path ----------------------------------------------------------


async def test_search_finds_a_code_from_before_the_compaction_and_reads_it(
    app_factory, server, monkeypatch
):
    """The issue's acceptance path, with every archive read checked to be off the loop."""
    readers: list[threading.Thread] = []
    original = ArchiveStore._read

    def recording(self: ArchiveStore, *args: Any) -> object:
        readers.append(threading.current_thread())
        return original(self, *args)

    monkeypatch.setattr(ArchiveStore, "_read", recording)
    app = archived(app_factory)
    async with app.run_test(size=SIZE) as pilot:
        runbook_id = await archive_scenario(pilot, server)
        surface = [e.seq for e in app.runtime.driver.surface.entries]
        runbook_seq = next(
            e.seq
            for e in of_kind(app.runtime.thread.log.events, ev.UserMessage)
            if e.text == RUNBOOK
        )
        assert runbook_seq not in surface  # compacted out of the context
        readers.clear()
        inspector = await open_inspector(pilot)
        await search_code(pilot)
        search = app.query_one(SearchTab)
        assert search.results[0]["id"] == runbook_id
        assert search.results[0]["origin"] == "archive"
        assert app.query_one(ResultList).has_focus  # Enter reads at once

        await pilot.press("enter")  # lands on the page holding the match: page 2
        await idle(pilot)
        reader = app.query_one(ReaderTab)
        assert inspector.query_one("TabbedContent").active == "reader"
        assert reader.page is not None
        assert reader.page["offset"] == 4000
        assert reader.page["text"] == RUNBOOK[4000:RECORD_CHARS]
        assert CODE in reader.page["text"]
        assert reader.page["truncated"] is True and reader.has_class("-truncated")
        assert reader.page["next_offset"] is None
        assert reader.check_action("next_page", ()) is False

        await pilot.press("p")
        await idle(pilot)
        assert reader.page["offset"] == 0
        assert reader.page["text"] == RUNBOOK[:4000]
        assert CODE not in reader.page["text"]
        assert reader.check_action("previous_page", ()) is False

        await pilot.press("n")
        await idle(pilot)
        assert reader.page["offset"] == 4000
    main = threading.main_thread()
    assert readers, "the inspector read the archive"
    assert all(thread is not main for thread in readers)


async def test_batches_list_sources_and_enter_reads_one(app_factory, server):
    app = archived(app_factory)
    async with app.run_test(size=SIZE) as pilot:
        runbook_id = await archive_scenario(pilot, server)
        await open_inspector(pilot)
        batches = app.query_one(BatchesTab)
        assert [(r.batch, r.state, r.records, r.truncated) for r in batches.rows] == [
            (1, "reachable", 4, 1)
        ]
        assert app.query_one(BatchTable).has_focus
        await pilot.press("enter")  # the batch → its sources
        sources = app.query_one(SourceList)
        assert sources.has_focus
        assert [row.source_id for row in batches.sources][0] == runbook_id
        assert batches.sources[0].truncated and batches.sources[0].chars == RECORD_CHARS
        await pilot.press("enter")
        await idle(pilot)
        reader = app.query_one(ReaderTab)
        assert reader.page is not None and reader.page["id"] == runbook_id


async def test_checkpoint_enter_opens_its_batch(app_factory, server):
    app = archived(app_factory)
    async with app.run_test(size=SIZE) as pilot:
        await archive_scenario(pilot, server)
        block = app.query_one(CheckpointBlock)
        assert block.batch_id == 1
        block.focus()
        await pilot.press("enter")
        await idle(pilot)
        inspector = app.query_one(ArchiveInspector)
        assert inspector.display
        assert inspector.query_one("TabbedContent").active == "batches"
        assert app.query_one(BatchesTab).shown == 1
        assert app.query_one(BatchTable).has_focus


async def test_notes_show_citation_status_and_open_readable_ones(app_factory, server):
    app = archived(app_factory)
    async with app.run_test(size=SIZE) as pilot:
        runbook_id = await archive_scenario(pilot, server)
        await open_inspector(pilot)
        await pilot.press("f2", "f2", "f2")
        await idle(pilot)
        notes = app.query_one(NoteList)
        assert notes.has_focus
        assert [t for t in notes.targets if t] == [
            (runbook_id, "available"),
            (MISSING, "unavailable"),
        ]
        missing = notes.targets.index((MISSING, "unavailable"))
        notes.highlighted = missing
        await pilot.press("enter")
        await idle(pilot)
        assert app.query_one(ArchiveInspector).query_one("TabbedContent").active == "notes"
        notes.highlighted = 0  # a note, not a citation: Enter is not offered
        assert notes.check_action("select", ()) is False
        notes.highlighted = notes.targets.index((runbook_id, "available"))
        await pilot.press("enter")
        await idle(pilot)
        assert app.query_one(ArchiveInspector).query_one("TabbedContent").active == "reader"
        assert app.query_one(ReaderTab).page["id"] == runbook_id  # type: ignore[index]


async def test_escape_closes_the_inspector_when_nothing_runs(app_factory, server):
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        inspector = await open_inspector(pilot)
        assert inspector.display and app.focused is app.query_one(BatchTable)
        await pilot.press("escape")
        await pilot.pause()
        assert not inspector.display
        assert app.query_one(PromptInput).has_focus


async def test_empty_archive_and_search_of_the_active_conversation(app_factory, server):
    server.script(s.text("Noted."))
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await say(pilot, f"the gate code is {CODE}")
        await open_inspector(pilot)
        batches = app.query_one(BatchesTab)
        assert batches.rows == []
        assert "Nothing has been compacted" in str(batches.query_one("#batches-title").render())
        await search_code(pilot)
        results = app.query_one(SearchTab).results
        assert [r["origin"] for r in results] == ["active"]


async def test_continuity_off_says_so_in_plain_words(app_factory, server):
    app = with_continuity(app_factory(), enabled=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        inspector = await open_inspector(pilot)
        assert inspector.has_class("-off")
        panel = str(inspector.query_one("#inspector-off").render())
        assert "task_continuity.enabled: false" in panel
        assert inspector.check_action("next_tab", ()) is False


async def test_a_new_thread_clears_what_the_inspector_showed(app_factory, server):
    app = archived(app_factory)
    async with app.run_test(size=SIZE) as pilot:
        await archive_scenario(pilot, server)
        await open_inspector(pilot)
        await search_code(pilot)
        assert app.query_one(SearchTab).results
        await app.chat.switch_thread(None)
        await settle(pilot)
        await idle(pilot)
        assert app.query_one(SearchTab).results == []
        assert app.query_one(SearchBox).value == ""
        assert app.query_one(BatchesTab).rows == []
        assert app.query_one(NotesTab).context is app.runtime.continuity


async def test_an_expired_batch_is_listed_in_plain_words(app_factory, server):
    """With room for one batch, the second compaction evicts the first."""
    server.script(s.text("one"), s.text("summary one"), s.text("two"), s.text("summary two"))
    app = with_continuity(app_factory(), max_batches=1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await say(pilot, f"first message with {CODE}")
        await say(pilot, "/compact")
        await say(pilot, "second message")
        await say(pilot, "/compact")
        await open_inspector(pilot)
        batches = app.query_one(BatchesTab)
        assert [(r.batch, r.state) for r in batches.rows] == [(2, "reachable"), (1, "expired")]
        status = str(batches.query_one("#batches-status").render())
        assert "partially expired" in status and "size limit" in status
        await pilot.press("down")
        await idle(pilot)
        title = str(batches.query_one("#batches-title").render())
        assert "Batch 1: expired" in title and "its messages are gone" in title
        assert app.query_one(SourceList).option_count == 0
        await search_code(pilot)
        assert app.query_one(SearchTab).results == []


async def test_a_fork_says_where_its_compacted_history_is(app_factory, server):
    """A fork reads no archive (the seed's fork rule): the pane says the parent keeps it,
    rather than only "nothing archived yet"."""
    server.script(s.text("one"), s.text("summary one"))
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await say(pilot, f"first message with {CODE}")
        await say(pilot, "/compact")
        parent = app.runtime.thread.id
        await say(pilot, "/fork")
        assert app.runtime.thread.id != parent
        await open_inspector(pilot)
        batches = app.query_one(BatchesTab)
        assert batches.rows == []
        status = str(batches.query_one("#batches-status").render())
        assert f"fork of thread {parent}" in status
        assert f"history search --thread {parent}" in status
        await search_code(pilot)
        assert all(r["origin"] == "active" for r in app.query_one(SearchTab).results)
