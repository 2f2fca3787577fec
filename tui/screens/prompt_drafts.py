"""What the prompt holds unsent, and the prompts that come back into it.

Nothing the user typed is lost: a prompt left unsent when a thread closes is
kept in its log (engine.threads.draft) and comes back when it opens again,
ahead of anything typed since; so do the prompts a turn withdrew when it
failed before any reply. Ctrl+C on a prompt with text empties it, into the
history (Up brings it back).
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen

from engine.driver import InboxItemId
from engine.events import TurnEnd
from engine.runtime import Runtime
from engine.threads.draft import current_draft, keep_draft, withdrawn_text
from tui.widgets.prompt_input import PromptInput


class PromptDrafts:
    def __init__(self, screen: Screen[Any]) -> None:
        self._screen = screen

    @property
    def _prompt(self) -> PromptInput:
        return self._screen.query_one(PromptInput)

    def unsent(self) -> str:
        """What the prompt holds, typed and not sent."""
        return self._prompt.text

    def begin_resend(self, runtime: Runtime | None, turn: int, text: str) -> None:
        """`/edit`: the last prompt in the input; sending it replaces that exchange."""
        prompt = self._prompt
        if prompt.editing_item is not None:  # a queued prompt's edit: dropped, as Ctrl+C does
            self.clear(runtime)
        prompt.begin_resend(turn, text)

    def prefill(self, text: str) -> None:
        """Put a prompt's text in the input, ready to edit and send."""
        prompt = self._prompt
        prompt.set_value(text)
        prompt.focus()

    def restore(self, runtime: Runtime) -> None:
        """The prompt left unsent when this thread was last closed comes back. Not into a
        view of a thread another process writes: that one has it."""
        draft = current_draft(runtime.thread.log)
        if not draft or runtime.thread.read_only:
            return
        prompt = self._prompt
        if prompt.text == draft:
            return
        prompt.give_back(draft)
        self._screen.notify("Your unsent prompt from last time is back in the box.")

    def restore_withdrawn(self, runtime: Runtime, end: TurnEnd) -> None:
        """The prompts a turn withdrew when it failed before any reply (the model never saw
        them answered) go back into the input once, ready to send again: sent again, the
        model has them once."""
        text = withdrawn_text(runtime.thread.log, end)
        if text:
            self._prompt.give_back(text)

    def clear(self, runtime: Runtime | None) -> bool:
        """Ctrl+C on a prompt with text: it empties, and nothing is lost (False: empty).
        A queued prompt being edited is released unchanged."""
        prompt = self._prompt
        editing = prompt.editing_item
        resending = prompt.editing_prompt is not None
        if not prompt.text.strip() and editing is None and not resending:
            return False
        prompt.discard_draft()
        if resending:
            self._screen.notify("Edit dropped: the last exchange is unchanged. Up brings it back.")
        elif editing is not None:
            if runtime is not None:
                runtime.driver.release(InboxItemId(editing))
            self._screen.notify(
                f"Edit dropped: queued prompt #{editing} is unchanged. Up brings it back."
            )
        else:
            self._screen.notify("Prompt cleared: Up brings it back.")
        return True

    def keep(self, runtime: Runtime | None) -> str | None:
        """At quit: what the prompt holds goes into the thread's log for its next open; the
        text returned (None: nothing) could not be kept there, and is printed once the
        terminal is restored."""
        text = self.unsent()
        if runtime is not None and keep_draft(runtime.thread.log, text):
            return None
        return text if text.strip() else None
