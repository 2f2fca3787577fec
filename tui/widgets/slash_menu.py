"""Completion for slash commands, fed by the command registry."""

from __future__ import annotations

from collections.abc import Iterable

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option


class SlashMenu(OptionList):
    DEFAULT_CSS = """
    SlashMenu {
        display: none;
        height: auto;
        max-height: 10;
        border: round $primary;
        background: $surface;
    }
    SlashMenu.-visible { display: block; }
    """

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.can_focus = False

    def show_for(self, prefix: str, commands: Iterable[tuple[str, str]]) -> bool:
        """Filter to commands starting with `prefix`; False when none match."""
        matches = [(name, summary) for name, summary in commands if name.startswith(prefix)]
        self.clear_options()
        for name, summary in matches:
            label = Content.assemble((f"/{name}", "bold"), "  ", (summary, "$text-muted"))
            self.add_option(Option(label, id=name))
        self.set_class(bool(matches), "-visible")
        if matches:
            self.highlighted = 0
        return bool(matches)

    def hide(self) -> None:
        self.remove_class("-visible")

    @property
    def is_open(self) -> bool:
        """Offering completions (not `visible`: that is `DOMNode.visible`, the CSS property)."""
        return self.has_class("-visible")

    @property
    def chosen(self) -> str | None:
        if self.highlighted is None:
            return None
        option = self.get_option_at_index(self.highlighted)
        return option.id
