"""Text typed or pasted where nothing takes it lands in the prompt (tui.typed).

A character typed on the transcript, the queue or a tool block goes to the
prompt, and so does the rest of a burst that reached them before the focus
moved; a paste on a widget that takes no text too. Not while the inspector
has the focus or the whole screen: it keeps its own (its search box).
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.screen import Screen

from tui.screens.inspector_pane import InspectorPane
from tui.typed import stray_character
from tui.widgets.prompt_input import PromptInput


class StrayText:
    def __init__(self, screen: Screen[Any], inspector: InspectorPane) -> None:
        self._screen = screen
        self._inspector = inspector

    def key(self, event: events.Key) -> None:
        character = stray_character(self._screen, event)
        prompt = self._prompt()
        if character is None or prompt is None:
            return
        event.stop()
        event.prevent_default()
        self._screen.set_focus(prompt)
        prompt.insert(character)

    def paste(self, event: events.Paste) -> None:
        prompt = self._prompt()
        if prompt is None:
            return
        event.stop()
        prompt.take_paste(event.text)

    def _prompt(self) -> PromptInput | None:
        """The prompt, when stray text should go there."""
        screen = self._screen
        focused = screen.focused
        if focused is not None and self._inspector.holds(focused):
            return None
        prompt = screen.query_one(PromptInput)
        if not prompt.display or screen.has_class("-inspector-full"):
            return None
        return prompt
