"""Notes tab: the model's task notebook, and whether each cited source can still be read.

The model keeps up to eight short notes (`task_note`) that survive every
compaction. Each note may cite sources; a citation is only as good as the
source behind it, so every one shows its status in plain words (the same
resolution the model gets in its notebook message). Enter on a readable
citation opens it in the Reader, so the user can check the note against the
original words.
"""

from __future__ import annotations

from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from engine.util.safe_text import safe_text
from tui.inspector import data
from tui.inspector.messages import OpenSource
from tui.inspector.status_words import citation_label, citation_meaning, history_line
from tui.inspector.tab import InspectorTab, Stale

ABOUT = "Notes the model keeps across compactions. They are its own reports, not verified facts."
EMPTY = (
    "No task notes yet. The model writes them with task_note (up to 8) to keep track of "
    "the task; they appear here with the sources they cite."
)


class NoteList(OptionList):
    """Notes and their citations, one option each; Enter reads a citation."""

    BINDINGS = [
        Binding(
            "enter", "select", "Read source", tooltip="on a citation: read its source in the Reader"
        )
    ]

    targets: list[tuple[str, str] | None]
    """Per option: (source id, citation status) for a citation, None for a note."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.targets = []

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "select":
            return self.citation is not None
        return True

    @property
    def citation(self) -> tuple[str, str] | None:
        index = self.highlighted
        if index is None or not 0 <= index < len(self.targets):
            return None
        return self.targets[index]

    def watch_highlighted(self, highlighted: int | None) -> None:
        super().watch_highlighted(highlighted)
        self.refresh_bindings()


class NotesTab(InspectorTab):
    DEFAULT_CSS = """
    NotesTab > .hint { margin: 0 0 1 0; }
    """

    def compose(self) -> ComposeResult:
        yield Static(Content.styled(ABOUT, "$text-muted"), classes="hint")
        yield Static(id="notes-status", classes="status")
        yield NoteList(id="note-list")

    def reset(self) -> None:
        self.query_one("#notes-status", Static).update("")
        listing = self.query_one(NoteList)
        listing.targets = []
        listing.clear_options()

    def reload(self) -> None:
        self.load_notes()

    def focus_default(self) -> None:
        self.query_one(NoteList).focus()

    @work(exclusive=True, group="notes", exit_on_error=False)
    async def load_notes(self) -> None:
        status = self.query_one("#notes-status", Static)
        try:
            report = await self.fetch(data.notes)
        except Stale:
            return
        except Exception as exc:
            status.update(self.failure("read the task notes", exc))
            return
        history = report.get("history") or {}
        status.update(history_line(str(history.get("status", "")), history.get("reason")))
        self._fill(list(report.get("notes") or []))

    def _fill(self, notes: list[dict[str, Any]]) -> None:
        listing = self.query_one(NoteList)
        highlighted = listing.highlighted
        options: list[Option | None] = []
        targets: list[tuple[str, str] | None] = []
        for note in notes:
            if options:
                options.append(None)  # a rule between notes (not an option: no target)
            options.append(
                Option(
                    Content.assemble(
                        (safe_text(str(note.get("key", ""))), "bold $accent"),
                        "\n",
                        safe_text(str(note["content"])),
                    )
                )
            )
            targets.append(None)
            for citation in note.get("citations") or []:
                source, state = safe_text(str(citation["id"])), str(citation["status"])
                options.append(
                    Option(
                        Content.assemble(
                            ("↳ cites ", "$text-muted"),
                            (source, "$text-muted"),
                            "\n",
                            citation_label(state),
                            ": ",
                            citation_meaning(state),
                        )
                    )
                )
                targets.append((source, state))
        listing.clear_options()
        listing.targets = targets
        if not options:
            listing.add_option(Option(Content.styled(EMPTY, "$text-muted"), disabled=True))
            listing.targets = [None]
            return
        listing.add_options(options)
        listing.highlighted = min(highlighted or 0, len(targets) - 1)

    @on(OptionList.OptionSelected, "#note-list")
    def _open(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        listing = self.query_one(NoteList)
        index = event.option_index
        target = listing.targets[index] if 0 <= index < len(listing.targets) else None
        if target is None:
            return
        source, state = target
        if state != "available":
            self.notify(
                f"Cannot open {source}: {citation_meaning(state)}", severity="warning", markup=False
            )
            return
        self.post_message(OpenSource(source))
