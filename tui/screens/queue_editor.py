"""Changing the queue before its prompts start: Delete, Ctrl+Z and E on the queue.

E holds a queued prompt (it and what waits behind it stay queued) while its
text is in the prompt, until Enter saves it in place or Ctrl+C drops the
edit. Delete removes one; Ctrl+Z, as the very next key, puts it back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.screen import Screen

from engine.driver import Driver, DriverClosedError, InboxItemId
from engine.util.safe_text import safe_text
from tui.widgets.prompt_input import PromptInput


class QueueEditor:
    def __init__(self, screen: Screen[Any], notice: Callable[[str, str], None]) -> None:
        self._screen = screen
        self._notice = notice
        """Says in the transcript that a change could not be made."""
        self.undo_item: int | None = None
        """The queued prompt Delete just removed: Ctrl+Z, as the next key, puts it back."""

    def remove(self, driver: Driver, item_id: int) -> None:
        try:
            removed = driver.remove(InboxItemId(item_id))
        except OSError as exc:
            self._notice(f"Not removed: {exc}.", "error")
            return
        if removed is None:
            return
        prompt = self._screen.query_one(PromptInput)
        if prompt.editing_item == removed.id:
            prompt.end_edit()  # the edit's text stays in the prompt, as a new prompt
        self.undo_item = removed.id
        flat = " ".join(safe_text(removed.text).split())
        short = flat if len(flat) <= 40 else flat[:39] + "…"
        self._screen.notify(f"Removed queued prompt #{removed.id} ({short}). Ctrl+Z puts it back.")

    def forget_removed(self) -> None:
        """Any key but Ctrl+Z after a removal: the undo is over (Ctrl+Z is the prompt's)."""
        self.undo_item = None

    def undo_remove(self, driver: Driver | None) -> None:
        item, self.undo_item = self.undo_item, None
        if item is None or driver is None:
            return
        try:
            restored = driver.restore(InboxItemId(item))
        except (OSError, DriverClosedError) as exc:
            self._notice(f"Not put back: {exc}.", "error")
            return
        if restored:
            self._screen.notify(f"Queued prompt #{item} is back in its place.")

    def edit(self, driver: Driver, item_id: int) -> None:
        """E on a queued prompt: its text goes into the prompt, the prompt held meanwhile."""
        prompt = self._screen.query_one(PromptInput)
        editing = prompt.editing_item
        if editing == item_id:
            prompt.focus()
            return
        if editing is not None:  # another edit was open: dropped, its text in the history
            prompt.discard_draft()
            driver.release(InboxItemId(editing))
        elif prompt.editing_prompt is not None:  # so was /edit's
            prompt.discard_draft()
        item = driver.hold(InboxItemId(item_id))
        if item is None:
            self._screen.notify(f"Queued prompt #{item_id} has already started.")
            return
        prompt.begin_edit(item.id, item.text)
        self._screen.notify(
            f"Editing queued prompt #{item.id}: the queue waits for it. "
            "Enter saves it in place; Ctrl+C drops the edit."
        )

    def save(self, driver: Driver, item: int, text: str) -> None:
        """Enter on a queued prompt being edited: it changes in place. Held since the edit
        began, it can only be gone if it was removed; then the text is the user's to send."""
        prompt = self._screen.query_one(PromptInput)
        if driver.edit(InboxItemId(item), text):
            prompt.end_edit()
            return
        prompt.end_edit()
        prompt.give_back(text)
        self._screen.notify(
            f"Queued prompt #{item} is no longer queued, so the edit was not saved: "
            "it is in the prompt, and Enter sends it as a new prompt.",
            severity="warning",
        )
