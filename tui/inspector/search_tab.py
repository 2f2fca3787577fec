"""Search tab: the model's `history_search`, for the user.

The query runs through the same HistoryView as the model's tool, over the
messages still in the conversation and every archived batch this position
can reach, so the user finds exactly what the model could find. Results show
an excerpt around the match with the query's words highlighted, where the
source lives, and its id; Enter opens it in the Reader.
"""

from __future__ import annotations

import re
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from engine.continuity.search import PAGE_CHARS
from engine.safe_text import safe_text
from tui.inspector import data
from tui.inspector.highlight import highlighted, terms_pattern
from tui.inspector.messages import OpenSource
from tui.inspector.status_words import history_label
from tui.inspector.tab import InspectorTab, Stale

SHOWN_CHARS = 240
"""Of the 600-character excerpt, the part around the match a result shows."""
HELP = (
    "Search is by exact words, codes and names (Chinese by character pairs), "
    "in this conversation and everything compacted out of it."
)


def around_match(text: str, pattern: re.Pattern[str] | None, width: int = SHOWN_CHARS) -> str:
    """One line of at most `width` characters centred on the first match."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    found = pattern.search(flat) if pattern is not None else None
    centre = found.start() if found is not None else 0
    begin = max(0, min(centre - width // 3, len(flat) - width))
    piece = flat[begin : begin + width]
    return ("…" if begin > 0 else "") + piece + ("…" if begin + width < len(flat) else "")


def match_page(item: dict[str, Any], pattern: re.Pattern[str] | None) -> int:
    """The offset of the page holding the result's match, so Enter lands on the words.

    `offset` in a result is where its excerpt starts in the source; the match
    is inside the excerpt.
    """
    excerpt = str(item.get("excerpt", ""))
    found = pattern.search(excerpt) if pattern is not None else None
    at = int(item.get("offset") or 0) + (found.start() if found is not None else 0)
    return at // PAGE_CHARS * PAGE_CHARS


class SearchBox(Input):
    """The query; Enter searches (shown in the footer)."""

    BINDINGS = [Binding("enter", "submit", "Search")]


class ResultList(OptionList):
    """Search results; Enter opens the highlighted source in the Reader."""

    BINDINGS = [Binding("enter", "select", "Read")]


class SearchTab(InspectorTab):
    DEFAULT_CSS = """
    SearchTab > SearchBox {
        margin: 0 0 1 0;
    }
    """
    BINDINGS = [Binding("down", "results", "Results", show=False)]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.query_text = ""
        self.results: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        # Not selected on focus: a character typed elsewhere in the inspector lands in
        # the box before it takes focus, and must not be replaced by the next one.
        box = SearchBox(
            placeholder="exact words or a code, then Enter",
            id="search-box",
            select_on_focus=False,
        )
        box.cursor_blink = False
        yield box
        yield Static(Content.styled(HELP, "$text-muted"), id="search-status", classes="status")
        yield ResultList(id="search-results")

    def reset(self) -> None:
        self.query_text = ""
        self.results = []
        self.query_one(SearchBox).value = ""
        self.query_one(ResultList).clear_options()
        self.query_one("#search-status", Static).update(Content.styled(HELP, "$text-muted"))

    def focus_default(self) -> None:
        self.query_one(SearchBox).focus()

    def search(self, query: str) -> None:
        """Run a query as if typed (the inspector and tests use this)."""
        self.query_one(SearchBox).value = query
        self._start(query)

    @on(Input.Submitted, "#search-box")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._start(event.value)

    def _start(self, query: str) -> None:
        if not query.strip():
            self.query_one("#search-status", Static).update(
                Content.styled("Type a word or a code to search for.", "$text-muted")
            )
            return
        self.query_text = query
        self.query_one("#search-status", Static).update(
            Content.styled(safe_text(f"Searching for “{query}”…"), "$text-muted")
        )
        self.run_search(query)

    @work(exclusive=True, group="search", exit_on_error=False)
    async def run_search(self, query: str) -> None:
        status = self.query_one("#search-status", Static)
        try:
            result = await self.fetch(data.search, query)
        except Stale:
            return
        except Exception as exc:
            status.update(self.failure("search the history", exc))
            return
        if query != self.query_text:
            return
        self._show(query, result)

    def _show(self, query: str, result: dict[str, Any]) -> None:
        status = self.query_one("#search-status", Static)
        listing = self.query_one(ResultList)
        items = list(result.get("results") or [])
        self.results = items
        listing.clear_options()
        history = Content.assemble(("\nHistory: ", "$text-muted"), history_label(result["status"]))
        if not items:
            why = safe_text(str(result.get("message") or "")) or (
                "no source holds these words; try another keyword"
            )
            line = safe_text(f"No match for “{query}”: {why}.")
            status.update(Content.assemble((line, "bold"), history))
            return
        partial = all(item.get("matched") == "some" for item in items)
        count = f"{len(items)} match" + ("" if len(items) == 1 else "es")
        if partial:
            count += " holding only some of the words"
        status.update(Content.assemble((count, "bold"), (" · Enter reads", "$text-muted"), history))
        pattern = terms_pattern(query)
        options: list[Option | None] = []
        for n, item in enumerate(items):
            if options:
                options.append(None)  # a rule between results: excerpts run several lines
            options.append(Option(self._prompt(item, pattern), id=str(n)))
        listing.add_options(options)
        listing.highlighted = 0
        if self.screen.focused is self.query_one(SearchBox):
            listing.focus()

    @staticmethod
    def _prompt(item: dict[str, Any], pattern: re.Pattern[str] | None) -> Content:
        if item.get("origin") == "archive":
            where = f"compacted, batch {item.get('batch')}"
        else:
            where = "in the conversation"
        head = Content.assemble(
            (safe_text(str(item.get("role", "?"))), "bold $accent"),
            (safe_text(f" · {where} · seq {item.get('seq')}"), "$text-muted"),
        )
        if item.get("truncated"):
            head = Content.assemble(head, (" · truncated", "$text-warning"))
        if item.get("echo"):
            head = Content.assemble(
                head, (" · a copy made by the model's history tools", "$text-muted")
            )
        excerpt = highlighted(around_match(str(item.get("excerpt", "")), pattern), pattern)
        source = safe_text(str(item.get("id")))
        return Content.assemble(head, "\n", excerpt, "\n", (source, "$text-muted"))

    @on(OptionList.OptionSelected, "#search-results")
    def _open(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        index = int(event.option.id or 0)
        if 0 <= index < len(self.results):
            item = self.results[index]
            self.post_message(
                OpenSource(
                    str(item["id"]),
                    offset=match_page(item, terms_pattern(self.query_text)),
                    highlight=self.query_text,
                )
            )

    def action_results(self) -> None:
        listing = self.query_one(ResultList)
        if listing.option_count and not listing.has_focus:
            listing.focus()
