"""The prompt: multi-line, with history and slash-command completion.

Enter sends and Alt+Enter steers; Shift+Enter or Ctrl+J start a new line.
Up and Down walk the history only from the first and last line, so editing
a long prompt never jumps away from what is being typed. Text loaded into it
(a failed prompt back from the log, a queued prompt to edit, history) and
pasted text are made terminal-safe: the prompt draws what it holds, raw.
"""

from __future__ import annotations

from textual import events
from textual.widgets import TextArea

from engine.safe_text import safe_text
from tui.messages import PromptSubmitted
from tui.widgets.slash_menu import SlashMenu

NEWLINE_KEYS = ("shift+enter", "ctrl+j")
STEER_KEYS = ("alt+enter", "ctrl+enter")


class PromptInput(TextArea):
    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        min-height: 3;
        max-height: 10;
        border: tall $border-blurred;
        padding: 0 1;
    }
    PromptInput:focus { border: tall $primary; }
    """

    def __init__(self, *, prompt_history: list[str] | None = None, id: str | None = None) -> None:
        super().__init__(id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.cursor_blink = False
        self.prompt_history: list[str] = list(prompt_history or [])
        self._history_index: int | None = None
        self._draft = ""
        self.menu: SlashMenu | None = None
        """The completion menu this prompt drives while it is visible."""
        self.editing_item: int | None = None

    def _complete(self, menu: SlashMenu, key: str) -> None:
        if key == "up":
            menu.action_cursor_up()
        elif key == "down":
            menu.action_cursor_down()
        elif key == "escape":
            menu.hide()
        else:
            chosen = menu.chosen
            menu.hide()
            if chosen is None:
                return
            self.set_value(f"/{chosen}")
            if key == "enter":
                self._submit(steer=False)

    @property
    def first_line(self) -> bool:
        return self.cursor_location[0] == 0

    @property
    def last_line(self) -> bool:
        return self.cursor_location[0] == self.document.line_count - 1

    def set_value(self, text: str) -> None:
        self.load_text(safe_text(text))
        last = self.document.line_count - 1
        self.move_cursor((last, len(self.document[last])))

    async def _on_paste(self, event: events.Paste) -> None:
        event.prevent_default()  # TextArea's own handler would insert the raw text as well
        await super()._on_paste(events.Paste(safe_text(event.text)))

    def _submit(self, *, steer: bool) -> None:
        text = self.text
        if not text.strip():
            return
        if not self.prompt_history or self.prompt_history[-1] != text:
            self.prompt_history.append(text)
        self._history_index = None
        self._draft = ""
        # Cleared here, synchronously: keys typed before the app handles the
        # message land in an empty prompt instead of being wiped with it.
        self.clear()
        self.post_message(PromptSubmitted(text, steer=steer))

    def give_back(self, text: str) -> None:
        """A prompt the app could not take returns, ahead of anything typed since."""
        typed = self.text
        self.set_value(text + ("\n" + typed if typed else ""))

    def _recall(self, step: int) -> bool:
        if not self.prompt_history:
            return False
        if self._history_index is None:
            if step > 0:
                return False
            self._draft = self.text
            index = len(self.prompt_history) - 1
        else:
            index = self._history_index + step
        if index >= len(self.prompt_history):
            self._history_index = None
            self.set_value(self._draft)
            return True
        self._history_index = max(0, index)
        self.set_value(self.prompt_history[self._history_index])
        return True

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        menu = self.menu
        if menu is not None and menu.is_open and key in ("up", "down", "tab", "enter", "escape"):
            event.stop()
            event.prevent_default()
            self._complete(menu, key)
            return
        if key == "enter":
            event.stop()
            event.prevent_default()
            self._submit(steer=False)
            return
        if key in STEER_KEYS:
            event.stop()
            event.prevent_default()
            self._submit(steer=True)
            return
        if key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if key == "up" and self.first_line and self._recall(-1):
            event.stop()
            event.prevent_default()
            return
        if key == "down" and self.last_line and self._recall(+1):
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)
