"""Batches tab: every compaction's archived batch, and the sources of the chosen one.

Each successful compaction archives the messages it took out of the context
as one batch. The table lists them newest first with their state in plain
words; moving the cursor lists that batch's sources below, and Enter on a
source opens it in the Reader. Both lists are line-rendered (a DataTable and
an OptionList), so a batch of 256 sources costs no widget per row.
"""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import DataTable, OptionList, Static
from textual.widgets.option_list import Option

from engine.continuity.archive.records import Source
from engine.continuity.batch_report import BatchRow, batch_sources, batches_report
from engine.util.safe_text import safe_text
from tui.inspector.messages import OpenSource
from tui.inspector.status_words import BATCH, batch_label, batch_meaning, history_line
from tui.inspector.tab import InspectorTab, Stale

LEGEND = (
    "msgs: messages archived · left/cut: messages left out (over max_records_per_batch) "
    "/ cut short (over max_record_chars)"
)
PREVIEW_CHARS = 120
"""A source's preview: the start of its text on one line, so the user can tell sources apart."""
EMPTY = (
    "Nothing has been compacted in this thread yet. After /compact (or an automatic "
    "compaction), the messages taken out of the context are kept here word for word."
)


def when(stamp: str) -> str:
    """An ISO-8601 UTC stamp as a short local time; '—' when unknown."""
    if not stamp:
        return "—"
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp[:16]
    return moment.astimezone().strftime("%b %d %H:%M")


class BatchTable(DataTable[Text]):
    """The batches, one row each; Enter moves on to the batch's sources."""

    BINDINGS = [
        Binding("enter", "select_cursor", "Sources", tooltip="on a batch: list its sources")
    ]


class SourceList(OptionList):
    """The sources of one batch; Enter opens the highlighted one in the Reader."""

    BINDINGS = [Binding("enter", "select", "Read", tooltip="on a source: read it in the Reader")]


class BatchesTab(InspectorTab):
    DEFAULT_CSS = """
    BatchesTab > BatchTable {
        height: auto;
        max-height: 12;
        scrollbar-size-vertical: 1;
    }
    BatchesTab > #batches-title {
        height: auto;
        padding: 1 0 0 0;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[BatchRow] = []
        self.sources: list[Source] = []
        self.shown: int | None = None
        """The batch whose sources are listed (or being read)."""
        self.wanted: int | None = None
        """A batch to select once the table has loaded (from a checkpoint's Enter)."""

    def compose(self) -> ComposeResult:
        yield Static(id="batches-status", classes="status")
        yield BatchTable(id="batch-table", cursor_type="row", show_cursor=True)
        yield Static(Content.styled(LEGEND, "$text-muted"), classes="hint")
        yield Static(id="batches-title")
        yield SourceList(id="source-list")

    def on_mount(self) -> None:
        table = self.query_one(BatchTable)
        # Fixed widths: the layout never depends on whether rows have arrived.
        table.add_column("#", key="batch", width=3)
        table.add_column("time", key="time", width=12)
        table.add_column("msgs", key="records", width=4)
        table.add_column("state", key="state", width=10)
        table.add_column("left/cut", key="limits", width=8)

    # -- down: the inspector's calls ------------------------------------------

    def reset(self) -> None:
        self.rows = []
        self.sources = []
        self.shown = None
        self.query_one(BatchTable).clear()
        self.query_one(SourceList).clear_options()
        self.query_one("#batches-status", Static).update("")
        self.query_one("#batches-title", Static).update("")

    def reload(self) -> None:
        self.load_batches()

    def select_batch(self, batch: int | None) -> None:
        """Show this batch once the table is loaded (None: a checkpoint never archived)."""
        self.wanted = batch
        if batch is None:
            self.notify(
                "This checkpoint's messages were not archived (task continuity was off, or "
                "the capture failed), so there is no batch to show.",
                severity="warning",
            )
        self.load_batches()

    def focus_default(self) -> None:
        self.query_one(BatchTable).focus()

    # -- reads ------------------------------------------------------------------

    @work(exclusive=True, group="batches", exit_on_error=False)
    async def load_batches(self) -> None:
        status = self.query_one("#batches-status", Static)
        try:
            report = await self.fetch(batches_report)
        except Stale:
            return
        except Exception as exc:
            status.update(self.failure("read the archive's batches", exc))
            return
        status.update(history_line(report.status, report.reason))
        self._fill(report.rows)

    def _fill(self, rows: tuple[BatchRow, ...]) -> None:
        table = self.query_one(BatchTable)
        keep = self.wanted if self.wanted is not None else self.shown
        self.wanted = None
        self.rows = list(rows)
        table.clear()
        for row in rows:
            trunc = "?" if row.truncated is None else str(row.truncated)
            table.add_row(
                Text(str(row.batch)),
                Text(when(row.created)),
                Text(str(row.records)),
                Text(BATCH[row.state][0]),
                Text(f"{row.omitted}/{trunc}"),
                key=str(row.batch),
            )
        if not rows:
            self.shown = None
            self.query_one(SourceList).clear_options()
            self.query_one("#batches-title", Static).update(Content.styled(EMPTY, "$text-muted"))
            return
        index = next((i for i, r in enumerate(rows) if r.batch == keep), 0)
        table.move_cursor(row=index, scroll=True)
        self._show_batch(rows[index], force=True)

    @on(DataTable.RowHighlighted, "#batch-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self.rows):
            self._show_batch(self.rows[event.cursor_row])

    @on(DataTable.RowSelected, "#batch-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        listing = self.query_one(SourceList)
        if listing.option_count:
            listing.focus()

    def _show_batch(self, row: BatchRow, *, force: bool = False) -> None:
        if row.batch == self.shown and not force:
            return
        self.shown = row.batch
        title = self.query_one("#batches-title", Static)
        listing = self.query_one(SourceList)
        if row.state != "reachable":
            self.sources = []
            listing.clear_options()
            title.update(
                Content.assemble(
                    (f"Batch {row.batch}: ", "bold"),
                    batch_label(row.state),
                    f" — {batch_meaning(row.state)}.",
                )
            )
            return
        title.update(Content.assemble((f"Batch {row.batch}: ", "bold"), "reading sources…"))
        self.load_sources(row)

    @work(exclusive=True, group="sources", exit_on_error=False)
    async def load_sources(self, row: BatchRow) -> None:
        title = self.query_one("#batches-title", Static)
        try:
            sources = await self.fetch(batch_sources, row.batch)
        except Stale:
            return
        except Exception as exc:
            title.update(self.failure(f"read the sources of batch {row.batch}", exc))
            return
        if self.shown != row.batch:
            return
        self.sources = sources
        title.update(
            Content.assemble(
                (f"Batch {row.batch}: ", "bold"),
                f"{len(sources)} sources, oldest first",
                ("  (Enter reads one)", "$text-muted"),
            )
        )
        listing = self.query_one(SourceList)
        highlighted = listing.highlighted
        listing.clear_options()
        listing.add_options([Option(self._source_prompt(s), id=s.source_id) for s in sources])
        if sources:
            listing.highlighted = min(highlighted or 0, len(sources) - 1)

    @staticmethod
    def _source_prompt(source: Source) -> Content:
        preview = " ".join(safe_text(source.text[: PREVIEW_CHARS * 4]).split())[:PREVIEW_CHARS]
        head = Content.assemble(
            (safe_text(source.role), "bold $accent"),
            (f" · seq {source.seq} · {source.chars:,} chars", "$text-muted"),
        )
        if source.truncated:
            head = Content.assemble(head, (" · truncated", "$text-warning"))
        return Content.assemble(head, "\n", preview or ("(no text)", "$text-muted"))

    @on(OptionList.OptionSelected, "#source-list")
    def _open(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.post_message(OpenSource(event.option.id))
