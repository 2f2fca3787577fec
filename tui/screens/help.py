"""/help: the registry's commands and the key bindings, in one modal."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    ("Enter", "send the prompt (queued if something is running)"),
    ("Alt+Enter", "steer: add to the running turn before its next model request"),
    ("Shift+Enter / Ctrl+J", "new line in the prompt"),
    ("Up / Down", "prompt history (on the first / last line)"),
    ("/", "command completion (Tab or Enter picks)"),
    ("Esc", "cancel the running reply or compaction"),
    ("Tab", "from the prompt: the queue (Delete removes, E edits)"),
    ("End", "in the transcript: jump to the newest output"),
    ("Ctrl+O", "toggle the archive inspector"),
    ("F2", "next inspector tab"),
    ("n / p / c", "inspector reader: next / previous page, copy the page"),
    ("Esc", "close the inspector (when nothing is running)"),
    ("Ctrl+Y", "copy the last reply"),
    ("Ctrl+P", "command palette"),
    ("Ctrl+Q", "quit"),
]


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%;
        max-width: 100;
        height: 80%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    """
    BINDINGS = [Binding("escape,q,f1", "dismiss", "Close")]

    def __init__(self, commands: Iterable[tuple[str, str]], notes: str = "") -> None:
        super().__init__()
        self.commands = list(commands)
        self.notes = notes

    def compose(self) -> ComposeResult:
        width = max((len(name) for name, _ in self.commands), default=4) + 3
        key_width = max(len(key) for key, _ in KEYS) + 2
        parts: list[Content | str | tuple[str, str]] = [("Commands\n", "bold $accent")]
        for name, summary in self.commands:
            parts += [(f"  /{name:<{width}}", "bold $text-primary"), summary, "\n"]
        parts += ["\n", ("Keys\n", "bold $accent")]
        for key, action in KEYS:
            parts += [(f"  {key:<{key_width}}", "bold"), action, "\n"]
        if self.notes:
            parts += ["\n", self.notes, "\n"]
        parts += ["\n", ("Esc closes this help.", "$text-muted")]
        with VerticalScroll():
            yield Static(Content.assemble(*parts), id="help-text")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
