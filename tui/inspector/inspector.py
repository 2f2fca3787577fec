"""The archive inspector: batches, search, reader and notes of the open thread.

A side pane (the whole screen on narrow terminals: the chat screen sets
`-inspector-full`) that shows what compaction took out of the context and
what the model can still recover: the same `HistoryView` the model's
history tools use, so the user and the model see one truth.

The chat screen calls down into it with exactly four methods: `bind_runtime`
when a thread opens, `refresh_data` when the archive may have changed,
`open_batch` for a checkpoint's Enter, and `focus_default` when it is shown.
The tabs post `OpenSource` up when the user picks a source anywhere; the
inspector shows it in the Reader. Esc posts `CloseInspector` up, except while
something runs (`busy`): Esc then cancels that. Every read of the archive runs
in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static, TabbedContent, TabPane

from engine.continuity import ContinuityContext
from engine.runtime import Runtime
from engine.util.safe_text import safe_text
from tui.inspector.batches_tab import BatchesTab
from tui.inspector.messages import OpenSource
from tui.inspector.notes_tab import NotesTab
from tui.inspector.reader_tab import ReaderTab
from tui.inspector.search_tab import SearchBox, SearchTab
from tui.inspector.status_words import DISABLED
from tui.inspector.tab import InspectorTab
from tui.inspector.tab_switcher import TabSwitcher
from tui.messages import CloseInspector
from tui.typed import stray_character

TABS = ("batches", "search", "reader", "notes")
OPENING = "Opening the thread…"


class ArchiveInspector(Vertical):
    DEFAULT_CSS = """
    ArchiveInspector {
        display: none;
        width: 50%;
        border-left: solid $primary;
    }
    ArchiveInspector > #inspector-off {
        display: none;
        height: auto;
        margin: 1 1;
        padding: 1 2;
        border: round $warning;
    }
    ArchiveInspector.-off > #inspector-off { display: block; }
    ArchiveInspector.-off > #inspector-tabs { display: none; }
    ArchiveInspector > #inspector-tabs { height: 1fr; }
    ArchiveInspector > #inspector-tabs > ContentSwitcher { height: 1fr; }
    ArchiveInspector TabPane { height: 1fr; padding: 1 1 0 1; }
    """
    BINDINGS = [
        Binding("escape", "close", "Close", tooltip="close the inspector"),
        Binding("f2", "next_tab", "Next tab", tooltip="next tab (Search, Batches, Notes, Reader)"),
        Binding("shift+f2", "previous_tab", "Previous tab", show=False),
    ]

    def __init__(self, busy: Callable[[], bool] = lambda: False, id: str | None = None) -> None:
        # Off (showing "Opening the thread…") until bind_runtime hands down a context.
        super().__init__(id=id, classes="-off")
        self._busy = busy
        """Whether something runs that Esc cancels: then Esc is not the pane's."""
        self.runtime: Runtime | None = None
        self.context: ContinuityContext | None = None

    def compose(self) -> ComposeResult:
        yield Static(Content(OPENING), id="inspector-off")
        with TabSwitcher(id="inspector-tabs", initial="batches"):
            with TabPane("Batches", id="batches"):
                yield BatchesTab(id="batches-tab")
            with TabPane("Search", id="search"):
                yield SearchTab(id="search-tab")
            with TabPane("Reader", id="reader"):
                yield ReaderTab(id="reader-tab")
            with TabPane("Notes", id="notes"):
                yield NotesTab(id="notes-tab")

    # -- the screen's calls --------------------------------------------------------

    def on_mount(self) -> None:
        if self.runtime is not None:  # bound before it was mounted
            self._apply()

    def bind_runtime(self, runtime: Runtime) -> None:
        """A thread was opened: show its archive (or say why there is none)."""
        self.runtime = runtime
        self.context = runtime.continuity
        if self.is_mounted:
            self._apply()

    def _apply(self) -> None:
        runtime, context = self.runtime, self.context
        off = self.query_one("#inspector-off", Static)
        if runtime is None:
            off.update(Content(OPENING))
        elif context is None:
            off.update(Content.styled(DISABLED, "bold"))
        self.set_class(context is None, "-off")
        home = runtime.thread.home if runtime is not None else None
        for tab in self.query(InspectorTab):
            tab.home = home
            tab.set_context(context)
        if self.display:
            self.refresh_data()

    def refresh_data(self) -> None:
        """The archive or notes may have changed: re-read what the open tab shows."""
        if not self.display or self.context is None:
            return
        self._active_tab().reload()

    def open_batch(self, batch: int | None) -> None:
        """Show one batch's sources (from a checkpoint in the transcript)."""
        if self.context is None:
            return
        tabs = self.query_one(TabbedContent)
        tabs.active = "batches"
        batches = self.query_one(BatchesTab)
        batches.select_batch(batch)
        batches.focus_default()

    def focus_default(self) -> None:
        if self.context is None:
            return
        self._active_tab().focus_default()

    # -- up from the tabs ---------------------------------------------------------

    def _active_tab(self) -> InspectorTab:
        pane = self.query_one(TabbedContent).active_pane
        assert pane is not None
        return pane.query_one(InspectorTab)

    @on(OpenSource)
    def _open_source(self, message: OpenSource) -> None:
        message.stop()
        self.query_one(TabbedContent).active = "reader"
        reader = self.query_one(ReaderTab)
        reader.open(message)
        reader.focus_default()

    @on(TabbedContent.TabActivated, "#inspector-tabs")
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        event.stop()
        self.refresh_data()
        if self.display:
            # Once the pane is shown: focus cannot go to a widget still hidden.
            self.call_after_refresh(self.focus_default)

    def on_key(self, event: events.Key) -> None:
        """A character typed on a list or the reader starts (or goes on with) a search:
        only the Search tab takes text, and typed text must land somewhere."""
        character = stray_character(self.screen, event)
        if character is None or self.context is None:
            return
        event.stop()
        event.prevent_default()
        self._take_text(character)

    def on_paste(self, event: events.Paste) -> None:
        """A paste on a list or the reader goes to the search box (its first line)."""
        if self.context is None:
            return
        event.stop()
        lines = event.text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self._take_text(lines[0])

    def _take_text(self, text: str) -> None:
        """Text typed or pasted off the search box: into it, on the Search tab."""
        tabs = self.query_one(TabbedContent)
        box = self.query_one(SearchBox)
        box.insert_text_at_cursor(safe_text(text))
        if tabs.active != "search":
            tabs.active = "search"  # focus follows once the tab is shown
        else:
            box.focus()

    # -- keys ------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "close":
            return not self._busy()
        if action in ("next_tab", "previous_tab"):
            return self.context is not None
        return True

    def action_close(self) -> None:
        self.post_message(CloseInspector())

    def action_next_tab(self) -> None:
        self._step_tab(+1)

    def action_previous_tab(self) -> None:
        self._step_tab(-1)

    def _step_tab(self, step: int) -> None:
        tabs = self.query_one(TabbedContent)
        at = TABS.index(tabs.active) if tabs.active in TABS else 0
        tabs.active = TABS[(at + step) % len(TABS)]
