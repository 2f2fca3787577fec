"""Search tab: the model's `history_search`, for the user.

The query runs through the same HistoryView as the model's tool, over the
messages still in the conversation and every archived batch this position
can reach, so the user finds exactly what the model could find. Results show
an excerpt around the match with the query's words highlighted, where the
source lives, and its id; Enter opens it in the Reader.

The "All threads" switch (F3) searches every thread of the user instead
(`engine.workspace.search_all`, read-only, in a worker): hits are grouped under
each thread's title and date; Enter reads a hit from its own thread, and the
Reader's `o` then switches the app to that thread. An answer stops at
`max_threads` threads with matches, like the CLI's; its last row then
searches the older threads it left, so no thread is out of reach.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Input, Label, OptionList, Static, Switch
from textual.widgets.option_list import Option

from engine.continuity.search.view import PAGE_CHARS
from engine.util.safe_text import safe_text
from engine.util.times import local_time
from engine.workspace.search_all import MAX_THREADS, search_all
from tui.inspector import data
from tui.inspector.highlight import highlighted, terms_pattern
from tui.inspector.messages import OpenSource
from tui.inspector.status_words import history_label
from tui.inspector.tab import InspectorTab, Stale

MORE = "more"
"""The id of the row that searches the threads an "All threads" answer left."""
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

    BINDINGS = [
        Binding("enter", "submit", "Search", tooltip="in the box: search this thread's archive")
    ]


class ResultList(OptionList):
    """Search results; Enter opens the highlighted source in the Reader."""

    BINDINGS = [Binding("enter", "select", "Read", tooltip="on a result: read it in the Reader")]


class SearchTab(InspectorTab):
    DEFAULT_CSS = """
    SearchTab > SearchBox {
        margin: 0 0 0 0;
    }
    SearchTab > #search-scope { height: auto; margin: 0 0 1 0; }
    SearchTab > #search-scope > Switch { border: none; padding: 0; height: 1; }
    SearchTab > #search-scope > Label { padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("down", "results", "Results", show=False, tooltip="from the box: to the results"),
        Binding("f3", "toggle_all", "All threads", tooltip="search every thread of yours"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.max_threads = MAX_THREADS
        """Threads with matches an "All threads" answer holds (as `--max-threads`)."""
        self.query_text = ""
        self.results: list[dict[str, Any]] = []
        self.threads: list[str | None] = []
        """Per result, the thread it is from (None: this thread)."""
        self.groups: list[dict[str, Any]] = []

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
        with Horizontal(id="search-scope"):
            yield Switch(False, id="search-all", animate=False)
            yield Label("All threads (F3)")
        yield Static(Content.styled(HELP, "$text-muted"), id="search-status", classes="status")
        yield ResultList(id="search-results")

    @property
    def all_threads(self) -> bool:
        return self.query_one("#search-all", Switch).value

    def action_toggle_all(self) -> None:
        switch = self.query_one("#search-all", Switch)
        switch.value = not switch.value

    @on(Switch.Changed, "#search-all")
    def _scope_changed(self, event: Switch.Changed) -> None:
        event.stop()
        if self.query_text.strip():
            self._start(self.query_text)

    def reset(self) -> None:
        self.query_text = ""
        self.results = []
        self.threads = []
        self.groups = []
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

    def _start(self, query: str, *, older_too: bool = False) -> None:
        if not query.strip():
            self.query_one("#search-status", Static).update(
                Content.styled("Type a word or a code to search for.", "$text-muted")
            )
            return
        self.query_text = query
        self.query_one("#search-status", Static).update(
            Content.styled(safe_text(f"Searching for “{query}”…"), "$text-muted")
        )
        self.run_search(query, self.all_threads, 0 if older_too else self.max_threads)

    @work(exclusive=True, group="search", exit_on_error=False)
    async def run_search(
        self, query: str, everywhere: bool = False, max_threads: int = MAX_THREADS
    ) -> None:
        status = self.query_one("#search-status", Static)
        try:
            if everywhere:
                limited = partial(search_all, max_threads=max_threads)
                result = await self.fetch_across(limited, query)
            else:
                result = await self.fetch(data.search, query)
        except Stale:
            return
        except Exception as exc:
            status.update(self.failure("search the history", exc))
            return
        if query != self.query_text or everywhere != self.all_threads:
            return
        if everywhere:
            self._show_all(query, result)
        else:
            self._show(query, result)

    def _show(self, query: str, result: dict[str, Any]) -> None:
        status = self.query_one("#search-status", Static)
        listing = self.query_one(ResultList)
        items = list(result.get("results") or [])
        self.results = items
        self.threads = [None] * len(items)
        self.groups = []
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

    def _show_all(self, query: str, result: dict[str, Any]) -> None:
        """Hits of every thread, each group under its thread's title and date."""
        status = self.query_one("#search-status", Static)
        listing = self.query_one(ResultList)
        listing.clear_options()
        if result.get("status") == "error":
            status.update(Content.styled(safe_text(str(result.get("message"))), "$text-error"))
            return
        groups = list(result.get("threads") or [])
        own = self.context.thread_id if self.context is not None else None
        self.groups = groups
        self.results, self.threads = [], []
        problems = [
            Content.styled(safe_text(f"\nthread {p['thread']}: {p['problem']}"), "$text-warning")
            for p in result.get("problems") or []
        ]
        searched = int(result.get("threads_searched") or 0)
        if not groups:
            line = safe_text(f"No match for “{query}” in {searched} threads.")
            status.update(Content.assemble((line, "bold"), *problems))
            return
        count = sum(len(g["results"]) for g in groups)
        plural = "" if searched == 1 else "s"
        head = f"{count} match{'' if count == 1 else 'es'} in {len(groups)} of {searched}"
        head += f" thread{plural} searched"
        left = int(result.get("threads_not_searched") or 0)
        older = f"{left} older thread{'' if left == 1 else 's'}"
        more = f" · {older} not searched" if left else ""
        parts = [(head, "bold"), (more, "$text-warning"), (" · Enter reads", "$text-muted")]
        status.update(Content.assemble(*parts, *problems))
        pattern = terms_pattern(query)
        options: list[Option | None] = []
        for group in groups:
            when = local_time(str(group.get("last_activity") or ""))
            mark = " (this thread)" if group["thread"] == own else ""
            title = Content.assemble(
                (safe_text(str(group.get("title"))), "bold"),
                (safe_text(f"\n{group['thread']}{mark} · {when} · "), "$text-muted"),
                history_label(group["status"]),
            )
            if options:
                options.append(None)
            options.append(Option(title, disabled=True))
            for item in group["results"]:
                options.append(None)
                options.append(Option(self._prompt(item, pattern), id=str(len(self.results))))
                self.results.append(item)
                self.threads.append(None if group["thread"] == own else group["thread"])
        if left:
            options.append(None)
            options.append(Option(Content.styled(f"Search the {older} too", "$accent"), id=MORE))
        listing.add_options(options)
        listing.highlighted = 1
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
        if event.option.id == MORE:
            self._start(self.query_text, older_too=True)
            return
        index = int(event.option.id or 0)
        if 0 <= index < len(self.results):
            item = self.results[index]
            self.post_message(
                OpenSource(
                    str(item["id"]),
                    offset=match_page(item, terms_pattern(self.query_text)),
                    highlight=self.query_text,
                    thread=self.threads[index] if index < len(self.threads) else None,
                )
            )

    def action_results(self) -> None:
        listing = self.query_one(ResultList)
        if listing.option_count and not listing.has_focus:
            listing.focus()
