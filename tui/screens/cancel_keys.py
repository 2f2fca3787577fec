"""Esc and Ctrl+C on the chat screen: each first cancels what runs (the newest command,
else the turn), then has its own meaning.

Esc closes the inspector; twice on an empty prompt, it opens the rewind
picker. Ctrl+C, as terminal chat apps have it: it copies selected text, else
clears the prompt (Up brings it back), else, twice, quits. The second key of a
pair must come next. The footer offers "Esc Cancel" only while Esc cancels or
closes something; it is refreshed only when that changes, since a refresh
rebuilds every key of the footer and state changes come many times a second.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, TextArea

from engine.runtime import Runtime
from tui.clipboard import copy_text
from tui.screens.command_runner import CommandRunner
from tui.screens.inspector_pane import InspectorPane
from tui.screens.prompt_drafts import PromptDrafts
from tui.widgets.prompt_input import PromptInput

QUIT_WINDOW = 3.0
"""Seconds a first Ctrl+C on an empty prompt waits for the second that quits."""


class CancelKeys:
    def __init__(
        self,
        screen: Screen[Any],
        runtime: Callable[[], Runtime | None],
        parts: tuple[CommandRunner, PromptDrafts, InspectorPane],
    ) -> None:
        self._screen = screen
        self._runtime = runtime
        self._commands, self._drafts, self._inspector = parts
        self._rewind_armed = False
        """The first Esc of Esc Esc (an empty prompt, nothing to cancel) was the last key."""
        self._quit_armed = False
        """A Ctrl+C on an empty prompt was the last key: the next one quits."""
        self._disarm_timer: Timer | None = None
        self._offered = False
        """Whether the footer offers Esc: not as composed (nothing runs, no pane is open),
        so the first sync does not rebuild it for nothing."""

    @property
    def esc_cancels(self) -> bool:
        """Whether Esc cancels something or closes the inspector now."""
        return self._commands.busy or self._inspector.shown

    def sync(self) -> None:
        """Refresh the footer's keys when what Esc does has changed."""
        offered = self.esc_cancels
        if offered != self._offered:
            self._offered = offered
            self._screen.app.refresh_bindings()  # Esc is bound on the app

    def seen(self, key: str) -> None:
        """Any key, as it arrives (before it is handled)."""
        if key != "ctrl+c":
            self._quit_armed = False
        if key != "escape":
            self._rewind_armed = False

    def escape(self) -> None:
        self._rewind_armed = False
        if not self._commands.cancel() and self._inspector.shown:
            self._screen.call_later(self._inspector.show, False, None)

    def escape_idle(self) -> None:
        """Esc with nothing to cancel: the second one on an empty prompt opens the rewind
        picker (the screen's `rewind` action)."""
        armed, self._rewind_armed = self._rewind_armed, False
        screen = self._screen
        prompt = screen.query_one(PromptInput)
        if screen.focused is not prompt or prompt.text.strip():
            return
        if armed:
            screen.call_later(screen.run_action, "rewind")
        else:
            self._rewind_armed = True  # the next key that is not Esc disarms it

    def interrupt(self) -> None:
        armed, self._quit_armed = self._quit_armed, False
        if self._commands.cancel():
            return
        app = self._screen.app
        # Text selected in a text box, or with the mouse on screen: Ctrl+C copies it.
        focused = app.focused
        in_box = focused.selected_text if isinstance(focused, Input | TextArea) else ""
        selected = in_box or app.screen.get_selected_text()
        if selected:
            copy_text(app, selected, "the selected text")  # a toast says where it went
            return
        if self._drafts.clear(self._runtime()):
            return
        if armed:
            self._screen.call_later(app.action_quit)
            return
        self._quit_armed = True
        app.notify("Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)
        if self._disarm_timer is not None:
            self._disarm_timer.stop()
        self._disarm_timer = self._screen.set_timer(QUIT_WINDOW, self._disarm)

    def _disarm(self) -> None:
        self._quit_armed = False
