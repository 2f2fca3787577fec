"""Reader tab: the exact text of one source, in the model's 4,000-character pages.

Pages come from `history_read` itself (same view, same offsets), so what the
user reads is what the model reads, and "page 2" means the same thing to
both. The text is shown as data: no Markdown, no markup, nothing rewrapped
but the soft wrap of the terminal. A source whose archived copy was cut short
says so in words.
"""

from __future__ import annotations

import math
import re
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Static

from engine.continuity.search.view import PAGE_CHARS
from engine.util.safe_text import safe_text
from engine.workspace.reports import cli_read
from tui.clipboard import copy_text
from tui.inspector import data
from tui.inspector.highlight import highlighted, terms_pattern
from tui.inspector.messages import OpenSource
from tui.inspector.status_words import TRUNCATED, history_line
from tui.inspector.tab import InspectorTab, Stale
from tui.messages import OpenThread

EMPTY = (
    "Nothing open yet. Choose a source in Batches or Search (Enter), or a cited source "
    "in Notes, to read its exact text here."
)


class ReaderTab(InspectorTab):
    DEFAULT_CSS = """
    ReaderTab > #reader-head { height: auto; }
    ReaderTab > #reader-truncated {
        display: none;
        height: auto;
        color: $text-warning;
        background: $warning-muted;
        padding: 0 1;
    }
    ReaderTab.-truncated > #reader-truncated { display: block; }
    ReaderTab > VerticalScroll {
        height: 1fr;
        margin: 1 0 0 0;
        scrollbar-size-vertical: 1;
    }
    ReaderTab > VerticalScroll:focus { background: $boost; }
    ReaderTab > Horizontal { height: auto; }
    ReaderTab > Horizontal > Button { min-width: 10; margin: 0 1 0 0; }
    """
    BINDINGS = [
        Binding("p", "previous_page", "Previous page"),
        Binding("n", "next_page", "Next page"),
        Binding("c", "copy_page", "Copy page", tooltip="copy this page"),
        Binding(
            "o", "open_thread", "Open its thread", tooltip="open the thread this source is from"
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.page: dict[str, Any] | None = None
        self.source_id: str | None = None
        self.pattern: re.Pattern[str] | None = None
        self.thread: str | None = None
        """The other thread the source is from (an all-threads hit); None: this one."""

    def compose(self) -> ComposeResult:
        yield Static(Content.styled(EMPTY, "$text-muted"), id="reader-head")
        yield Static(Content(TRUNCATED), id="reader-truncated")
        with VerticalScroll(id="reader-scroll"):
            yield Static(id="reader-text")
        with Horizontal():
            yield Button("◀ Previous (p)", id="reader-previous", compact=True, disabled=True)
            yield Button("Next (n) ▶", id="reader-next", compact=True, disabled=True)

    def reset(self) -> None:
        self.page = None
        self.source_id = None
        self.pattern = None
        self.thread = None
        self.query_one("#reader-head", Static).update(Content.styled(EMPTY, "$text-muted"))
        self.query_one("#reader-text", Static).update("")
        self.remove_class("-truncated")
        self._sync_controls()

    def focus_default(self) -> None:
        self.query_one("#reader-scroll").focus()

    def open(self, source: OpenSource) -> None:
        """Read one page of a source (the inspector hands each OpenSource on).

        Its `highlight` (a search query) stays marked on every page of this source;
        its `thread` names another of the user's threads it is read from (read-only,
        as `trove history read --thread` does); `o` then switches to it.
        """
        own = self.context.thread_id if self.context is not None else None
        self.thread = source.thread if source.thread != own else None
        self.source_id = source.source_id
        self.pattern = terms_pattern(source.highlight) if source.highlight else None
        self.read_page(source.source_id, source.offset)

    @work(exclusive=True, group="read", exit_on_error=False)
    async def read_page(self, source_id: str, offset: int) -> None:
        head = self.query_one("#reader-head", Static)
        try:
            if self.thread is not None:
                page = await self.fetch_across(cli_read, self.thread, source_id, offset)
            else:
                page = await self.fetch(data.read, source_id, offset)
        except Stale:
            return
        except Exception as exc:
            head.update(self.failure(f"read source {source_id}", exc))
            return
        if source_id != self.source_id:
            return
        self._show(page)

    def _show(self, page: dict[str, Any]) -> None:
        head = self.query_one("#reader-head", Static)
        body = self.query_one("#reader-text", Static)
        if page.get("status") == "error":
            self.page = None
            self.remove_class("-truncated")
            lines = Content.assemble(
                ("Cannot read this source: ", "bold $text-error"),
                safe_text(str(page.get("message", ""))),
            )
            history = page.get("history")
            if isinstance(history, dict) and "status" in history:
                lines = Content.assemble(
                    lines, "\n", history_line(history["status"], history.get("reason"))
                )
            head.update(lines)
            body.update("")
            self._sync_controls()
            return
        self.page = page
        shown = self._head(page)
        if self.thread is not None:
            where = safe_text(f"from thread {self.thread} · o opens that thread")
            shown = Content.assemble(shown, "\n", (where, "bold $text-warning"))
        head.update(shown)
        self.set_class(bool(page.get("truncated")), "-truncated")
        body.update(highlighted(str(page.get("text", "")), self.pattern))
        self.query_one("#reader-scroll", VerticalScroll).scroll_home(animate=False)
        self._sync_controls()

    @staticmethod
    def _head(page: dict[str, Any]) -> Content:
        chars = int(page.get("chars") or 0)
        offset = int(page.get("offset") or 0)
        end = offset + len(str(page.get("text", "")))
        pages = max(1, math.ceil(chars / PAGE_CHARS))
        number = offset // PAGE_CHARS + 1
        if page.get("origin") == "archive":
            where = f"compacted, batch {page.get('batch')}"
        else:
            where = "still in the conversation"
        span = f"characters {offset + 1:,}–{end:,} of {chars:,}" if chars else "empty"
        return Content.assemble(
            (safe_text(str(page.get("role", "?"))), "bold $accent"),
            (f" · {where} · seq {page.get('seq')}", "$text-muted"),
            "\n",
            (f"Page {number} of {pages}", "bold"),
            (f" · {span}", "$text-muted"),
            "\n",
            (safe_text(str(page.get("id", ""))), "$text-muted"),
        )

    # -- paging -------------------------------------------------------------------

    def _sync_controls(self) -> None:
        page = self.page
        self.query_one("#reader-previous", Button).disabled = not (
            page and int(page.get("offset") or 0) > 0
        )
        self.query_one("#reader-next", Button).disabled = not (
            page and page.get("next_offset") is not None
        )
        self.refresh_bindings()  # also shows or hides "Open its thread"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        page = self.page
        if action == "next_page":
            return bool(page and page.get("next_offset") is not None)
        if action == "previous_page":
            return bool(page and int(page.get("offset") or 0) > 0)
        if action == "copy_page":
            return page is not None
        if action == "open_thread":
            return self.thread is not None
        return True

    def action_next_page(self) -> None:
        if self.page and self.page.get("next_offset") is not None and self.source_id:
            self.read_page(self.source_id, int(self.page["next_offset"]))

    def action_previous_page(self) -> None:
        if self.page and self.source_id:
            offset = int(self.page.get("offset") or 0)
            if offset > 0:
                self.read_page(self.source_id, max(0, offset - PAGE_CHARS))

    def action_copy_page(self) -> None:
        if self.page:
            # What is shown: escapes in a clipboard would reach the terminal on paste.
            text = str(self.page.get("text", ""))
            copy_text(self.app, text, f"this page ({len(text):,} characters)")

    def action_open_thread(self) -> None:
        """Switch to the thread this source is from (its queue stays in its log)."""
        if self.thread is not None:
            self.post_message(OpenThread(self.thread))

    @on(Button.Pressed, "#reader-previous")
    def _previous(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_previous_page()

    @on(Button.Pressed, "#reader-next")
    def _next(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_next_page()
