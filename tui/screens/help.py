"""/help and F1: the registry's commands and the key bindings, in one modal.

Nothing here is written twice: the keys are read from the BINDINGS of the
widgets that own them (a binding's tooltip, or else its description, says
what it does) and the commands from the registry, so a key or a command
added anywhere shows up here without anyone remembering to.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widgets import Static

from engine.model.backend import Backend
from tui.screens.input_echo import EchoingModalScreen

NAMES = {
    "escape": "Esc",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "ctrl": "Ctrl",
    "alt": "Alt",
    "shift": "Shift",
    "super": "Super",
}

Row = tuple[str, str]
"""(keys as Textual names them, what they do)."""
Section = tuple[str, list[Row]]
"""(title, rows)."""


def key_label(keys: str) -> str:
    """ "ctrl+s,alt+enter" -> "Ctrl+S / Alt+Enter", as people write keys; a lone letter
    stays lower case (it is typed, not chorded)."""

    def name(part: str) -> str:
        if part in NAMES:
            return NAMES[part]
        if len(part) == 1 or (part[0] == "f" and part[1:].isdigit()):
            return part.upper()
        return part.title()

    def one(key: str) -> str:
        if len(key) == 1:
            return key
        return "+".join(name(p) for p in key.split("+"))

    return " / ".join(one(k.strip()) for k in keys.split(","))


def help_notes(configured: bool, backend: Backend | None) -> str:
    """What the help says last about this model, when there is something to say."""
    if not configured:
        return "No model is configured yet: see the panel in the transcript."
    if backend is not None and not backend.tools_enabled:
        return (
            "This model gets no tools (task_note, history_search, history_read): "
            "set model.tools: on to offer them. /compact, the archive and the "
            "inspector still work."
        )
    return ""


def _rows(bindings: Iterable[BindingType]) -> list[Row]:
    """One row per thing a key does; keys that do the same thing share a row
    ("N / Esc  no")."""
    rows: list[Row] = []
    for item in bindings:
        binding = item if isinstance(item, Binding) else Binding(*item)
        what = binding.tooltip or binding.description.lower()
        if not what or binding.action in ("help_quit", "screen.copy_text"):
            continue
        same = next((i for i, (_, done) in enumerate(rows) if done == what), None)
        if same is None:
            rows.append((binding.key, what))
        elif binding.key not in rows[same][0].split(","):
            rows[same] = (f"{rows[same][0]},{binding.key}", what)
    return rows


def _own(cls: type[DOMNode]) -> list[BindingType]:
    """The bindings a class declares itself (inherited ones belong to its base's help)."""
    return list(cls.__dict__.get("BINDINGS", []))


SCROLL_ACTIONS = ("scroll_up", "scroll_down", "page_up", "page_down", "scroll_home", "scroll_end")
"""The vertical scrolling a scrollable container inherits from Textual."""


def _scrolling(cls: type[DOMNode], what: str) -> list[BindingType]:
    """One row for the up/down scrolling `cls` inherits (its own keys say the rest)."""
    own = {key for b in _own(cls) for key in _binding(b).key.split(",")}
    keys = [
        key
        for base in cls.__mro__[1:]
        for b in base.__dict__.get("BINDINGS", [])
        if _binding(b).action in SCROLL_ACTIONS
        for key in _binding(b).key.split(",")
        if key not in own
    ]
    return [Binding(",".join(dict.fromkeys(keys)), "scroll", tooltip=what)] if keys else []


def _binding(item: BindingType) -> Binding:
    return item if isinstance(item, Binding) else Binding(*item)


def help_bindings(app: type[App[Any]], screen: type[Screen[Any]]) -> list[Section]:
    """The sections of the help's key list, one per place a key works in, each read from
    the bindings of the widgets there (`app`: the running app's class, whose own keys
    work anywhere; `screen`: the screen's the help is shown over)."""
    from tui.inspector.batches_tab import BatchTable, SourceList
    from tui.inspector.inspector import ArchiveInspector
    from tui.inspector.notes_tab import NoteList
    from tui.inspector.reader_tab import ReaderTab
    from tui.inspector.search_tab import ResultList, SearchBox, SearchTab
    from tui.screens.confirm import ConfirmScreen
    from tui.screens.consent import ConsentScreen
    from tui.screens.rewind import RewindScreen
    from tui.screens.threads import ThreadsScreen
    from tui.widgets.checkpoint_block import CheckpointBlock
    from tui.widgets.load_button import LoadButton
    from tui.widgets.prompt_input import PromptInput
    from tui.widgets.status_strip import QueueList
    from tui.widgets.thinking_block import ThinkingBlock
    from tui.widgets.tool_block import ToolBlock
    from tui.widgets.transcript import Transcript

    palette = Binding(app.COMMAND_PALETTE_BINDING, "command_palette", "command palette")
    scroll = _scrolling(Transcript, "scroll the transcript (once it has the focus: click it)")
    # The lists' Enter is OptionList's own (no binding of ours to read it from).
    open_thread = Binding("enter", "select", tooltip="open the highlighted thread")
    go_back = Binding("enter", "select", tooltip="go back to just before that prompt")
    sources: Sequence[tuple[str, Sequence[type[DOMNode]], list[BindingType]]] = [
        ("Keys anywhere", [app, Screen, screen], [palette]),
        ("Keys in the prompt", [PromptInput], []),
        ("Keys in the queue (Tab from the prompt)", [QueueList], []),
        ("Keys in the transcript", [Transcript, LoadButton], scroll),
        ("Keys on a block in the transcript", [ToolBlock, ThinkingBlock, CheckpointBlock], []),
        ("Keys in the archive inspector (Ctrl+O)", [ArchiveInspector], []),
        ("Inspector: Search tab", [SearchTab, SearchBox, ResultList], []),
        ("Inspector: Batches tab", [BatchTable, SourceList], []),
        ("Inspector: Notes tab", [NoteList], []),
        ("Inspector: Reader tab", [ReaderTab], []),
        ("Keys in a yes/no question", [ConfirmScreen], []),
        ("Keys when an MCP tool asks to run", [ConsentScreen], []),
        ("Keys in the thread list (Ctrl+T)", [ThreadsScreen], [open_thread]),
        ("Keys in the rewind list (Esc Esc)", [RewindScreen], [go_back]),
        ("Keys in this help", [HelpScreen], []),
    ]
    sections = []
    for title, classes, extra in sources:
        rows = _rows([b for cls in classes for b in _own(cls)] + extra)
        if rows:
            sections.append((title, rows))
    return sections


class HelpScreen(EchoingModalScreen[None]):
    CSS_PATH = ["dialog.tcss", "help.tcss"]
    BINDINGS = [Binding("escape,q,f1", "dismiss", "Close", tooltip="close this help")]

    def __init__(
        self, commands: Iterable[tuple[str, str]], keys: list[Section], notes: str = ""
    ) -> None:
        """Commands as (name with its usage, summary), from the registry; `keys` from
        `help_bindings`."""
        super().__init__()
        self.commands = list(commands)
        self.keys = keys
        self.notes = notes

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static("Commands", classes="help-heading -first")
            for name, summary in self.commands:
                yield _row(f"/{name}", summary, "-command")
            for title, rows in self.keys:
                yield Static(title, classes="help-heading")
                for keys, what in rows:
                    yield _row(key_label(keys), what)
            if self.notes:
                yield Static(self.notes, classes="help-end")

    @property
    def text(self) -> str:
        """What the help says, as plain lines of text ("key  what it does")."""
        lines = []
        for widget in self.query(".help-heading, .help-row, .help-end"):
            parts = widget.query(Static) if widget.has_class("help-row") else [widget]
            lines.append("  ".join(str(part.render()) for part in parts))
        return "\n".join(lines)

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


def _row(key: str, what: str, kind: str = "") -> Horizontal:
    return Horizontal(
        Static(key, classes=f"help-key {kind}", markup=False),
        Static(what, classes="help-what", markup=False),
        classes="help-row",
    )
