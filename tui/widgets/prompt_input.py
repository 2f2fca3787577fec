"""The prompt: multi-line, with history and slash-command completion.

Enter sends and Ctrl+S (or Alt+Enter where the terminal reports it) steers;
Shift+Enter or Ctrl+J start a new line; Ctrl+D on an empty prompt quits.
Up and Down walk the history only from the first and last line, so editing
a long prompt never jumps away from what is being typed. Text loaded into it
(a failed prompt back from the log, a queued prompt to edit, history) and
pasted text are made terminal-safe: the prompt draws what it holds, raw.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.binding import Binding
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import TextArea

from engine.util.safe_text import safe_text
from tui.messages import PromptSubmitted, ScrollTranscript
from tui.widgets.slash_menu import SlashMenu

NEWLINE_KEYS = "shift+enter,ctrl+j"
STEER_KEYS = "ctrl+s,alt+enter,ctrl+enter"
"""Ctrl+S first: tmux (and any terminal sending Alt+Enter as Esc, Enter) delivers Alt+Enter
as a plain Enter and Ctrl+Enter not at all, while Ctrl+S arrives intact everywhere."""


def pasted_text(text: str) -> str:
    """Pasted text as the prompt keeps it: line breaks sent as CR (tmux's paste, many
    terminals) or CRLF become newlines, then anything a terminal would obey goes."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return safe_text(text)


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
    # Priority: TextArea's own key handler would otherwise insert Enter as a newline
    # before a binding is consulted.
    # The tooltips are what F1 help says of each key (tui.screens.help reads them).
    BINDINGS = [
        Binding(
            "enter",
            "send",
            "Send",
            show=False,
            priority=True,
            tooltip="send the prompt (queued while a reply runs)",
        ),
        Binding(
            STEER_KEYS,
            "steer",
            "Steer",
            show=False,
            priority=True,
            tooltip="steer: add to the running reply before its next model request "
            "(also /steer TEXT; tmux passes only Ctrl+S)",
        ),
        Binding(NEWLINE_KEYS, "newline", "New line", show=False, priority=True),
        Binding(
            "up",
            "up",
            "History",
            show=False,
            priority=True,
            tooltip="previous prompt (from the first line)",
        ),
        Binding(
            "down",
            "down",
            "History",
            show=False,
            priority=True,
            tooltip="next prompt (from the last line)",
        ),
        Binding("tab", "pick", "Pick", show=False, priority=True, tooltip="pick from the / menu"),
        Binding(
            "escape",
            "close_menu",
            "Close menu",
            show=False,
            priority=True,
            tooltip="close the / menu",
        ),
        # The transcript scrolls from the prompt: the prompt's own page keys would only
        # move its cursor, and the focus need not leave the prompt to read back.
        Binding(
            "pageup",
            "scroll_transcript('page_up')",
            "Scroll up",
            show=False,
            priority=True,
            tooltip="scroll the transcript a page up (earlier messages load as you reach them)",
        ),
        Binding(
            "pagedown",
            "scroll_transcript('page_down')",
            "Scroll down",
            show=False,
            priority=True,
            tooltip="scroll the transcript a page down",
        ),
        Binding(
            "ctrl+home",
            "scroll_transcript('scroll_start')",
            "Top",
            show=False,
            priority=True,
            tooltip="the transcript's first message (the thread's start)",
        ),
        Binding(
            "ctrl+end",
            "scroll_transcript('scroll_end')",
            "Newest",
            show=False,
            priority=True,
            tooltip="jump to the newest output",
        ),
        # The app's copy of the last reply, not TextArea's redo (still on Super+Y).
        Binding("ctrl+y", "app.copy_reply", show=False, priority=True),
        Binding(
            "ctrl+d",
            "eof",
            "Quit",
            show=False,
            priority=True,
            tooltip="quit when the prompt is empty (else delete forward)",
        ),
    ]

    def __init__(self, *, prompt_history: list[str] | None = None, id: str | None = None) -> None:
        super().__init__(id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.cursor_blink = False
        self.prompt_history: list[str] = list(prompt_history or [])
        self._history_index: int | None = None
        self._draft = ""
        self.menu: SlashMenu | None = None
        """The completion menu this prompt drives while it is visible."""
        self.editing_item: int | None = None
        """The queued prompt being edited (held in the queue until the edit ends)."""
        self.editing_prompt: int | None = None
        """The turn whose prompt `/edit` put here: sending this replaces that exchange."""
        self._before_edit = ""

    _styles_generation = 0
    """Bumped each time the stylesheet applies this widget's styles (focus, theme, classes)."""
    _css_applied: tuple[Any, ...] | None = None
    """What the theme's styles were last taken from (see `render_lines`), the theme first."""

    def notify_style_update(self) -> None:
        self._styles_generation += 1
        super().notify_style_update()

    def render_lines(self, crop: Region) -> list[Strip]:
        # TextArea fills its theme's styles from CSS on every render (~0.4 ms, and
        # the prompt is in most frames' crop while a reply streams); they only change
        # when the stylesheet restyles it, its base style or the app's theme changes.
        theme = self._theme
        if theme:
            key = (theme, self._styles_generation, self.rich_style, self.app.theme)
            applied = self._css_applied
            if applied is None or applied[0] is not theme or key[1:] != applied[1:]:
                theme.apply_css(self)
                self._css_applied = key
        return super(TextArea, self).render_lines(crop)

    def _open_menu(self) -> SlashMenu | None:
        menu = self.menu
        return menu if menu is not None and menu.is_open else None

    def _pick(self, menu: SlashMenu, *, send: bool) -> None:
        chosen = menu.chosen
        menu.hide()
        if chosen is None:
            return
        self.set_value(f"/{chosen}")
        if send:
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
        # TextArea's own handler would insert the raw text as well, and the screen would
        # take the paste a second time for the prompt.
        event.prevent_default()
        event.stop()
        await super()._on_paste(events.Paste(pasted_text(event.text)))

    def take_paste(self, text: str) -> None:
        """A paste that reached another widget: it lands here, at the cursor."""
        self.focus()
        self.insert(pasted_text(text))

    def begin_edit(self, item_id: int, text: str) -> None:
        """Load a queued prompt to edit; what was typed waits aside until the edit ends."""
        if self.editing_item is None:
            self._before_edit = self.text
        self.editing_item = item_id
        self.set_value(text)
        self.focus()

    def begin_resend(self, turn: int, text: str) -> None:
        """`/edit`: load the last prompt (of turn `turn`) to edit and send in its place;
        what was typed waits aside until the edit ends, as for a queued prompt."""
        if self.editing_item is None and self.editing_prompt is None:
            self._before_edit = self.text
        self.editing_prompt = turn
        self.border_title = "editing your last prompt: Enter sends it in its place"
        self.set_value(text)
        self.focus()

    def end_edit(self) -> None:
        """The edit was saved or dropped: what was typed before it comes back, ahead of
        anything typed since."""
        self.editing_item = None
        self.editing_prompt = None
        self.border_title = None
        before, self._before_edit = self._before_edit, ""
        if before:
            self.give_back(before)

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

    def discard_draft(self) -> str:
        """Empty the prompt, keeping what it held in the history (Up brings it back)
        and leaving a queued prompt being edited as it is in the queue."""
        text = self.text
        if text.strip() and (not self.prompt_history or self.prompt_history[-1] != text):
            self.prompt_history.append(text)
        self._history_index = None
        self._draft = ""
        self.clear()
        if self.editing_item is not None or self.editing_prompt is not None:
            self.end_edit()
        return text

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

    # -- key actions (see BINDINGS) ----------------------------------------------------
    #
    # A priority binding runs while the app handles the key, but the characters typed
    # before it are still waiting in this widget's queue: each action therefore queues
    # its work behind them (call_later), so "hi<Enter>x" typed in one burst sends "hi"
    # and keeps "x".

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("pick", "close_menu"):
            # Without the menu, Tab moves the focus and Esc reaches the app (cancel).
            return self._open_menu() is not None
        return True

    def action_send(self) -> None:
        self.call_later(self._send)

    def action_steer(self) -> None:
        self.call_later(self._submit, steer=True)

    def action_scroll_transcript(self, action: str) -> None:
        """Hand a scroll key to the transcript (the chat screen owns it)."""
        self.post_message(ScrollTranscript(action))

    def action_eof(self) -> None:
        self.call_later(self._eof)

    async def _eof(self) -> None:
        if self.text:
            self.action_delete_right()
        else:
            await self.app.run_action("app.quit")

    def action_newline(self) -> None:
        self.call_later(self.insert, "\n")

    def action_up(self) -> None:
        self.call_later(self._up)

    def action_down(self) -> None:
        self.call_later(self._down)

    def action_pick(self) -> None:
        self.call_later(self._pick_open, send=False)

    def action_close_menu(self) -> None:
        self.call_later(self._close_menu)

    def _send(self) -> None:
        menu = self._open_menu()
        if menu is not None:
            self._pick(menu, send=True)
        else:
            self._submit(steer=False)

    def _up(self) -> None:
        menu = self._open_menu()
        if menu is not None:
            menu.action_cursor_up()
        elif not (self.first_line and self._recall(-1)):
            self.action_cursor_up()

    def _down(self) -> None:
        menu = self._open_menu()
        if menu is not None:
            menu.action_cursor_down()
        elif not (self.last_line and self._recall(+1)):
            self.action_cursor_down()

    def _pick_open(self, *, send: bool) -> None:
        menu = self._open_menu()
        if menu is not None:
            self._pick(menu, send=send)

    def _close_menu(self) -> None:
        menu = self._open_menu()
        if menu is not None:
            menu.hide()
