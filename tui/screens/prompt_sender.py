"""What Enter (or Ctrl+S, to steer) does with the prompt's text.

A /command runs; '//' sends a prompt that starts with a slash; a queued
prompt being edited changes in place; the last prompt /edit opened is sent in
place of the exchange it began; anything else goes to the driver,
queued after the running reply or steering it. Text that is not accepted (no
thread open yet, no model, a full disk, a read-only view) goes back into the
input, so nothing typed is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.screen import Screen

from engine.driver import DriverClosedError
from engine.runtime import Runtime
from engine.runtime.commands import is_command
from engine.runtime.rewind import RewindRefused, resend
from tui.screens.queue_editor import QueueEditor
from tui.widgets.prompt_input import PromptInput
from tui.widgets.slash_menu import SlashMenu
from tui.widgets.transcript import Transcript


class PromptSender:
    def __init__(
        self,
        screen: Screen[Any],
        configured: bool,
        queue: QueueEditor,
        run_command: Callable[[str], None],
        notice: Callable[[str, str], None],
    ) -> None:
        self._screen = screen
        self._configured = configured
        self._queue = queue
        self._run_command = run_command
        self._notice = notice
        self._hinted = False
        """Whether the user was told, once, how to steer instead of queueing."""

    def send(self, runtime: Runtime | None, text: str, *, steer: bool) -> None:
        screen = self._screen
        prompt = screen.query_one(PromptInput)
        # Whatever was sent, the user wants to see what comes of it.
        screen.query_one(Transcript).jump_to_end()
        if runtime is None:
            prompt.give_back(text)
            return
        if is_command(text):
            screen.query_one(SlashMenu).hide()
            screen.call_later(self._run_command, text)
            return
        if text.lstrip().startswith("//"):
            text = text.lstrip()[1:]
        if not self._configured:
            self._notice(
                "No model is configured, so this prompt was not sent (it is still in the "
                "input). See the panel above.",
                "warning",
            )
            prompt.give_back(text)
            return
        driver = runtime.driver
        if prompt.editing_prompt is not None:
            self._resend(runtime, prompt, prompt.editing_prompt, text)
            return
        try:
            if prompt.editing_item is not None:
                self._queue.save(driver, prompt.editing_item, text)
                return
            if steer and not driver.accepts_next_step:
                screen.notify("Nothing to steer right now: sent as a queued follow-up.")
            elif not steer and driver.running_turn is not None and not self._hinted:
                # Alt+Enter arrives as a plain Enter in tmux: say once how to steer instead.
                self._hinted = True
                screen.notify("Queued after this reply. Ctrl+S (or /steer TEXT) steers it instead.")
            driver.send(text, placement="next-step" if steer else "follow-up")
        except (OSError, DriverClosedError) as exc:
            # Not accepted (a full disk, a read-only view): the text goes back.
            prompt.give_back(text)
            self._notice(f"Not sent: {exc}. Your text is back in the input.", "error")

    def _resend(self, runtime: Runtime, prompt: PromptInput, turn: int, text: str) -> None:
        """Enter on the prompt `/edit` opened: it replaces the last exchange (kept as a
        branch). Refused (the thread moved on, a reply runs): the text stays in the input,
        still the edit, and the user hears why."""
        try:
            resend(runtime.driver, runtime.thread.log, turn, text)
        except RewindRefused as exc:
            prompt.give_back(text)
            self._notice(f"{exc}. Your text is still in the input.", "warning")
            return
        except (OSError, DriverClosedError) as exc:
            prompt.end_edit()
            prompt.give_back(text)
            self._notice(f"Not sent: {exc}. Your text is back in the input.", "error")
            return
        prompt.end_edit()
