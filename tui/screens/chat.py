"""The chat screen: transcript, status strip, prompt, and the archive inspector.

It is a view over the one Runtime it is attached to. Log events (live or
replayed) become transcript widgets; the engine's state becomes the status
strip; what the user types goes to the driver, or to the app when it is a
command. Everything the engine says reaches it as a Message from the
bridge (tui.bridge), never as a call from inside the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from msgspec import Struct
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen

from engine.driver import DriverClosedError, InboxItemId
from engine.events import (
    AssistantMessage,
    CompactEnd,
    LogEvent,
    NoteDelete,
    NoteSet,
    SessionRewind,
    ToolResult,
    TurnEnd,
    UserMessage,
)
from engine.model.backend import Backend
from engine.port import EngineState
from engine.runtime import Runtime
from engine.runtime.commands import is_command
from engine.runtime.rewind import RewindRefused, points, refusal, rewind
from engine.threads.draft import current_draft, withdrawn_text
from engine.util.safe_text import safe_text
from tui.bridge import (
    Bridge,
    EngineFailed,
    EngineMessage,
    EngineStateChanged,
    EngineWaiting,
    LogEventAppended,
    ReplyStreamed,
)
from tui.drawn_lines import DrawnReply, Kept
from tui.messages import (
    CommandEntered,
    OpenBatch,
    PromptSubmitted,
    QueueItemEdit,
    QueueItemRemove,
)
from tui.typed import stray_character
from tui.widgets.key_footer import KeyFooter
from tui.widgets.new_output import NewOutputMarker
from tui.widgets.prompt_input import PromptInput
from tui.widgets.slash_menu import SlashMenu
from tui.widgets.status_strip import QueueList, StatusStrip
from tui.widgets.title_bar import TitleBar
from tui.widgets.transcript import Transcript
from tui.widgets.welcome import TinyModelNote, Welcome, is_empty, placeholder, tiny_offline

NARROW = 100
"""Below this width the inspector takes the whole screen: half of 80 columns is too
narrow to read an archive page beside the chat."""


class ChatSettings(Struct, frozen=True):
    """What the screen shows that does not come from the thread, and the app's one hook
    into its mount (`show_opened`: show the thread in the first frame when it can)."""

    clock: Callable[[], float]
    model_label: str
    configured: bool
    config_label: str
    backend: Backend | None = None
    show_opened: Callable[[], bool] = lambda: False


class ChatScreen(Screen[None]):
    # Tab from the prompt goes to the queue while prompts wait in it (README, help);
    # otherwise, and from anywhere else, it moves the focus as usual.
    BINDINGS = [
        Binding(
            "tab",
            "focus_queue",
            "Queue",
            tooltip="from the prompt: the queue, while prompts wait (Delete removes, E edits)",
        ),
        Binding("tab", "app.focus_next", "Focus next", show=False),
        # Only right after Delete removed a queued prompt; else Ctrl+Z is the prompt's undo.
        Binding(
            "ctrl+z",
            "undo_remove",
            "Undo",
            show=False,
            priority=True,
            tooltip="right after Delete on the queue: put the removed prompt back",
        ),
        Binding("shift+tab", "app.focus_previous", "Focus previous", show=False),
    ]

    @dataclass
    class Ready(Message):
        """The screen is composed: a thread can be shown now."""

    @dataclass
    class ShowNotice(Message, bubble=False):
        text: str
        variant: str = ""

    def __init__(self, settings: ChatSettings) -> None:
        super().__init__(id="_default")
        self.settings = settings
        self.runtime: Runtime | None = None
        self._bridge: Bridge | None = None
        self._inspector_widget: Any = None
        self._queued = False
        self._hinted = False
        """Whether the user was told, once, how to steer instead of queueing."""
        self._undo_item: int | None = None
        """The queued prompt Delete just removed: Ctrl+Z, as the next key, puts it back."""
        self._waiting = ""
        """What the running request waits on ("retrying (2/3)…", "starting the offline
        model…"); cleared when it is over or text flows."""

    def compose(self) -> ComposeResult:
        yield TitleBar()
        with Horizontal(id="body"), Vertical(id="chat"):
            yield Transcript(id="transcript")
            yield NewOutputMarker(id="new-output")
            yield StatusStrip(self.settings.clock, id="status")
            yield SlashMenu(id="slash")
            yield PromptInput(id="prompt")
        yield KeyFooter()

    def on_mount(self) -> None:
        prompt = self.query_one(PromptInput)
        prompt.menu = self.query_one(SlashMenu)
        prompt.placeholder = placeholder(
            self.settings.model_label, self.settings.backend, self.settings.configured
        )
        self.query_one(Transcript).marker = self.query_one(NewOutputMarker)
        # Now, not after the first frame (`focus()` defers it): the first frame already
        # shows the prompt focused, ready to type into.
        self.set_focus(prompt, scroll_visible=False)
        if not self.settings.show_opened():
            self.post_message(self.Ready())

    # -- following a runtime ------------------------------------------------------------

    def attach_runtime(self, runtime: Runtime, kept: Kept | None = None) -> None:
        """Show this thread: its log so far (replies in `kept` drawn from the lines its last
        session kept: tui.drawn_lines), then whatever the engine says about it."""
        self.runtime = runtime
        self._bridge = Bridge(
            runtime, self, lambda _, notification, exc: self._display_failed(notification, exc)
        )
        title = self.query_one(TitleBar)
        title.thread = runtime.thread.id
        title.model = self.settings.model_label
        transcript = self.query_one(Transcript)
        transcript.remove_children()
        if not self.settings.configured:
            from tui.widgets.first_run import FirstRunPanel

            transcript.mount(FirstRunPanel(self.settings.config_label))
        elif is_empty(runtime.thread.log.events):
            transcript.mount(Welcome(self.settings.model_label, runtime.thread.dir))
            backend = self.settings.backend
            if backend is not None and tiny_offline(backend):
                transcript.mount(TinyModelNote(backend, self.settings.config_label))
        transcript.load(runtime.thread.log.events, kept)
        for notice in runtime.notices:
            transcript.notice(notice, "warning")
        if runtime.thread.read_only:
            transcript.notice(
                f"{runtime.thread.read_only}. You can read and search it here; "
                "/new starts a thread you can write in.",
                "warning",
            )
        self._restore_draft(runtime)
        self._update_context()
        self._show_state(runtime.state())
        if self._inspector_widget is not None:
            self._inspector_widget.bind_runtime(runtime)

    def detach_runtime(self, runtime: Runtime) -> None:
        """The closing runtime's late notifications must not reach widgets being torn down."""
        if self._bridge is not None and self._bridge.runtime is runtime:
            self._bridge.close()
            self._bridge = None
        if self.runtime is runtime:
            self.runtime = None

    def notice(self, text: str, variant: str = "") -> None:
        """A notice from outside the engine's flow (a command's result): it is queued behind
        what the engine said before it, so it lands after, e.g., the checkpoint /compact wrote."""
        self.post_message(self.ShowNotice(text, variant))

    def on_chat_screen_show_notice(self, message: ShowNotice) -> None:
        self._notice(message.text, message.variant)

    def _notice(self, text: str, variant: str = "") -> None:
        self.query_one(Transcript).notice(text, variant)

    def _current(self, message: EngineMessage) -> bool:
        """Only the attached runtime's messages count; the rest were queued before a switch."""
        message.stop()
        return message.bridge is self._bridge and self.runtime is not None

    def _display_failed(self, what: object, exc: Exception) -> None:
        """Showing something the engine said failed: the engine went on; the user hears
        of it once."""
        self.log.error(f"display of {type(what).__name__} failed: {exc!r}")
        if self.app.is_running and self.runtime is not None:
            self.app.notify(f"Display error ({type(exc).__name__}); the session goes on.")

    # -- engine → widgets ---------------------------------------------------------------

    def on_log_event_appended(self, message: LogEventAppended) -> None:
        if self._current(message):
            try:
                self._on_log_event(message.event)
            except Exception as exc:  # a widget bug must not end the session
                self._display_failed(message, exc)

    def on_reply_streamed(self, message: ReplyStreamed) -> None:
        if self._current(message):
            if self._waiting and self.runtime is not None:
                self._waiting = ""
                self._show_state(self.runtime.state(), restart=False)
            try:
                self.query_one(Transcript).delta(message.take())
            except Exception as exc:
                self._display_failed(message, exc)

    def on_engine_state_changed(self, message: EngineStateChanged) -> None:
        if self._current(message):
            self._show_state(message.state)

    def on_engine_waiting(self, message: EngineWaiting) -> None:
        if self._current(message):
            assert self.runtime is not None
            self._waiting = message.text
            self._show_state(self.runtime.state(), restart=False)

    def on_engine_failed(self, message: EngineFailed) -> None:
        """The engine could not record a failure in the log (the disk): show it here."""
        if self._current(message):
            self._notice(f"✗ {message.text}", "error")

    def _on_log_event(self, event: LogEvent) -> None:
        assert self.runtime is not None
        if isinstance(event, SessionRewind):
            self._show_line()
            return
        self.query_one(Transcript).show_event(event)
        if isinstance(event, AssistantMessage | UserMessage | ToolResult | CompactEnd):
            self._update_context()
        if isinstance(event, TurnEnd) and event.withdrawn:
            self._restore_failed_prompt(event)
        inspector = self._inspector_widget
        if isinstance(event, CompactEnd | NoteSet | NoteDelete) and inspector is not None:
            inspector.refresh_data()

    def drawn_replies(self) -> list[DrawnReply]:
        """The newest replies' lines as drawn now (tui.drawn_lines)."""
        return self.query_one(Transcript).to_keep()

    def _show_line(self) -> None:
        """After a rewind: the transcript and the inspector show the thread's new line."""
        assert self.runtime is not None
        transcript = self.query_one(Transcript)
        transcript.remove_children()
        transcript.load(self.runtime.thread.log.events)
        transcript.notice(
            "Rewound: the conversation goes on from here. What came after is kept "
            "as a branch (/rewind lists it).",
            "",
        )
        self._update_context()
        if self._inspector_widget is not None:
            self._inspector_widget.refresh_data()

    def prefill(self, text: str) -> None:
        """Put a prompt's text in the input, ready to edit and send."""
        prompt = self.query_one(PromptInput)
        prompt.set_value(text)
        prompt.focus()

    async def pick_and_rewind(self) -> None:
        """Open the rewind picker (the caller's worker waits for the choice), then go back
        there: the engine (engine.runtime.rewind) rewinds, the transcript follows its
        `session/rewind` event, and the prompt's text is put back to edit."""
        runtime = self.runtime
        if runtime is None:
            return
        log, driver = runtime.thread.log, runtime.driver
        why = refusal(driver, log)
        if why is not None:
            self.app.notify(why, severity="warning")
            return
        listed = points(log)
        if not listed:
            self.app.notify("Nothing to rewind to yet: this thread has no prompts.")
            return
        from tui.screens.rewind import RewindScreen

        chosen = await self.app.push_screen_wait(RewindScreen(listed))
        if chosen is None or self.runtime is not runtime:
            return
        try:
            rewind(driver, log, chosen)
        except RewindRefused as exc:  # something started while the picker was open
            self.app.notify(str(exc), severity="warning")
            return
        self.prefill(chosen.text)

    def prompt_empty(self) -> bool:
        prompt = self.query_one(PromptInput)
        return self.focused is prompt and not prompt.text.strip()

    def _restore_failed_prompt(self, end: TurnEnd) -> None:
        """The prompts a turn withdrew when it failed before any reply (the model never saw
        them answered, engine.threads.draft) go back into the input once, ahead of anything typed
        since, ready to send again: sent again, the model has them once."""
        assert self.runtime is not None
        text = withdrawn_text(self.runtime.thread.log, end)
        if text:
            self.query_one(PromptInput).give_back(text)

    def _show_state(self, state: EngineState, *, restart: bool = True) -> None:
        strip = self.query_one(StatusStrip)
        retry = f" — {self._waiting}" if self._waiting else ""  # a retry, a model start
        if state.compacting:
            strip.set_activity(
                f"compacting{retry} — Esc cancels; you can keep typing", timed=True, restart=restart
            )
        elif state.running_turn is not None:
            strip.set_activity(
                f"replying (turn {state.running_turn}){retry} — Esc cancels",
                timed=True,
                restart=restart,
            )
        else:
            self._waiting = ""
            strip.set_activity("")
        queued = bool(state.queue)
        strip.set_queue([(item.id, item.text, item.placement, item.held) for item in state.queue])
        if not queued and isinstance(self.focused, QueueList):
            # The queue went away under the focus: typing goes on in the prompt.
            self.set_focus(self.query_one(PromptInput), scroll_visible=False)
        if queued != self._queued:
            self._queued = queued
            self.refresh_bindings()  # the footer offers "Tab Queue" only while prompts wait
        self._sync_bindings()

    def _update_context(self) -> None:
        if self.runtime is None:
            return
        # The window pressure compaction measures against (for the offline model, the
        # size its server runs with less the reply cap): one figure for both.
        window = max(1, self.runtime.compaction.context_window)
        self.query_one(TitleBar).context_used = self.runtime.driver.surface.tokens / window

    # -- widgets → engine ----------------------------------------------------------------

    @on(PromptSubmitted)
    def _submitted(self, message: PromptSubmitted) -> None:
        message.stop()
        prompt = self.query_one(PromptInput)
        text = message.text
        # Whatever was sent, the user wants to see what comes of it.
        self.query_one(Transcript).jump_to_end()
        if self.runtime is None:
            prompt.give_back(text)
            return
        if is_command(text):
            self.query_one(SlashMenu).hide()
            self.post_message(CommandEntered(text))
            return
        if text.lstrip().startswith("//"):
            text = text.lstrip()[1:]
        if not self.settings.configured:
            self._notice(
                "No model is configured, so this prompt was not sent (it is still in the "
                "input). See the panel above.",
                "warning",
            )
            prompt.give_back(text)
            return
        driver = self.runtime.driver
        try:
            if prompt.editing_item is not None:
                self._save_edit(prompt, prompt.editing_item, text)
                return
            if message.steer and not driver.accepts_next_step:
                self.app.notify("Nothing to steer right now: sent as a queued follow-up.")
            elif not message.steer and driver.running_turn is not None and not self._hinted:
                # Alt+Enter arrives as a plain Enter in tmux: say once how to steer instead.
                self._hinted = True
                self.app.notify(
                    "Queued after this reply. Ctrl+S (or /steer TEXT) steers it instead."
                )
            driver.send(text, placement="next-step" if message.steer else "follow-up")
        except (OSError, DriverClosedError) as exc:
            # Not accepted (a full disk, a read-only view): the text goes back.
            prompt.give_back(text)
            self._notice(f"Not sent: {exc}. Your text is back in the input.", "error")

    def _save_edit(self, prompt: PromptInput, item: int, text: str) -> None:
        """Enter on a queued prompt being edited: it changes in place. Held since the edit
        began, it can only be gone if it was removed; then the text is the user's to send."""
        assert self.runtime is not None
        if self.runtime.driver.edit(InboxItemId(item), text):
            prompt.end_edit()
            return
        prompt.end_edit()
        prompt.give_back(text)
        self.app.notify(
            f"Queued prompt #{item} is no longer queued, so the edit was not saved: "
            "it is in the prompt, and Enter sends it as a new prompt.",
            severity="warning",
        )

    def _command_list(self) -> list[tuple[str, str]]:
        """Every command of the open thread as (name, summary), for the / menu."""
        if self.runtime is None:
            return []
        return [(command.name, command.summary) for command in self.runtime.commands]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "focus_queue":
            queue = self.query_one(QueueList)
            return queue.option_count > 0 and self.focused is self.query_one(PromptInput)
        if action == "undo_remove":
            return self._undo_item is not None
        return True

    def action_focus_queue(self) -> None:
        self.query_one(QueueList).focus()

    @on(NewOutputMarker.Jump)
    def _jump(self, message: NewOutputMarker.Jump) -> None:
        message.stop()
        self.query_one(Transcript).jump_to_end()

    def on_key(self, event: events.Key) -> None:
        """A character typed on the transcript, the queue or a tool block goes to the
        prompt (tui.typed), and so does the rest of a burst that reached them before
        the focus moved."""
        character = stray_character(self, event)
        prompt = self._prompt_for_strays()
        if character is None or prompt is None:
            return
        event.stop()
        event.prevent_default()
        self.set_focus(prompt)
        prompt.insert(character)

    def on_paste(self, event: events.Paste) -> None:
        """A paste that reached a widget that takes no text lands in the prompt."""
        prompt = self._prompt_for_strays()
        if prompt is None:
            return
        event.stop()
        prompt.take_paste(event.text)

    def _prompt_for_strays(self) -> PromptInput | None:
        """The prompt, when stray text should go there (the inspector keeps its own)."""
        focused = self.focused
        if focused is not None and self._in_inspector(focused):
            return None
        prompt = self.query_one(PromptInput)
        if not prompt.display or self.app.has_class("-inspector-full"):
            return None
        return prompt

    def _in_inspector(self, widget: Any) -> bool:
        inspector = self._inspector_widget
        return inspector is not None and (widget is inspector or inspector in widget.ancestors)

    @on(QueueItemRemove)
    def _remove_item(self, message: QueueItemRemove) -> None:
        message.stop()
        if self.runtime is None:
            return
        try:
            removed = self.runtime.driver.remove(InboxItemId(message.item_id))
        except OSError as exc:
            self._notice(f"Not removed: {exc}.", "error")
            return
        if removed is None:
            return
        prompt = self.query_one(PromptInput)
        if prompt.editing_item == removed.id:
            prompt.end_edit()  # the edit's text stays in the prompt, as a new prompt
        self._undo_item = removed.id
        flat = " ".join(safe_text(removed.text).split())
        short = flat if len(flat) <= 40 else flat[:39] + "…"
        self.app.notify(f"Removed queued prompt #{removed.id} ({short}). Ctrl+Z puts it back.")

    def forget_removed(self) -> None:
        """Any key but Ctrl+Z after a removal: the undo is over (Ctrl+Z is the prompt's)."""
        self._undo_item = None

    def action_undo_remove(self) -> None:
        item, self._undo_item = self._undo_item, None
        if item is None or self.runtime is None:
            return
        try:
            restored = self.runtime.driver.restore(InboxItemId(item))
        except (OSError, DriverClosedError) as exc:
            self._notice(f"Not put back: {exc}.", "error")
            return
        if restored:
            self.app.notify(f"Queued prompt #{item} is back in its place.")

    @on(QueueItemEdit)
    def _edit_item(self, message: QueueItemEdit) -> None:
        """E on a queued prompt: it is held (it and what waits behind it stay queued) while
        its text is in the prompt, until Enter saves it or Ctrl+C drops the edit."""
        message.stop()
        if self.runtime is None:
            return
        driver = self.runtime.driver
        prompt = self.query_one(PromptInput)
        editing = prompt.editing_item
        if editing == message.item_id:
            prompt.focus()
            return
        if editing is not None:  # another edit was open: dropped, its text in the history
            prompt.discard_draft()
            driver.release(InboxItemId(editing))
        item = driver.hold(InboxItemId(message.item_id))
        if item is None:
            self.app.notify(f"Queued prompt #{message.item_id} has already started.")
            return
        prompt.begin_edit(item.id, item.text)
        self.app.notify(
            f"Editing queued prompt #{item.id}: the queue waits for it. "
            "Enter saves it in place; Ctrl+C drops the edit."
        )

    @on(OpenBatch)
    async def _open_batch(self, message: OpenBatch) -> None:
        message.stop()
        await self.show_inspector(True)
        self._inspector_widget.open_batch(message.batch)

    @on(PromptInput.Changed)
    def _prompt_changed(self, event: PromptInput.Changed) -> None:
        prompt = self.query_one(PromptInput)
        menu = self.query_one(SlashMenu)
        text = prompt.text
        if text.startswith("/") and " " not in text and "\n" not in text:
            menu.show_for(text[1:].lower(), self._command_list())
        else:
            menu.hide()

    # -- the inspector -------------------------------------------------------------------

    @property
    def inspector_shown(self) -> bool:
        return bool(self._inspector_widget is not None and self._inspector_widget.display)

    async def _ensure_inspector(self) -> Any:
        """The inspector is built on first use: it costs nothing at launch."""
        if self._inspector_widget is None:
            from tui.inspector import ArchiveInspector

            widget = ArchiveInspector(id="inspector")
            widget.display = False
            self._inspector_widget = widget
            await self.query_one("#body").mount(widget)
            if self.runtime is not None:
                widget.bind_runtime(self.runtime)
        return self._inspector_widget

    async def show_inspector(self, show: bool) -> None:
        inspector = await self._ensure_inspector() if show else self._inspector_widget
        if inspector is None:
            return
        inspector.display = show
        self.app.set_class(show and self.app.size.width < NARROW, "-inspector-full")
        self._sync_bindings()
        if show:
            inspector.refresh_data()
            inspector.focus_default()
        else:
            self.query_one(PromptInput).focus()

    def _sync_bindings(self) -> None:
        sync = getattr(self.app, "sync_bindings", None)
        if sync is not None:
            sync()

    async def toggle_inspector(self) -> None:
        await self.show_inspector(not self.inspector_shown)

    def on_resize(self) -> None:
        if self._inspector_widget is not None:
            self.app.set_class(
                self.inspector_shown and self.app.size.width < NARROW, "-inspector-full"
            )

    def unsent_text(self) -> str:
        """What the prompt holds, typed and not sent."""
        return self.query_one(PromptInput).text

    def _restore_draft(self, runtime: Runtime) -> None:
        """The prompt left unsent when this thread was last closed comes back, ahead of
        anything typed since (engine.threads.draft). Not into a view of a thread another process
        writes: that one has it."""
        draft = current_draft(runtime.thread.log)
        if not draft or runtime.thread.read_only:
            return
        prompt = self.query_one(PromptInput)
        if prompt.text == draft:
            return
        prompt.give_back(draft)
        self.app.notify("Your unsent prompt from last time is back in the box.")

    def clear_draft(self) -> bool:
        """Ctrl+C on a prompt with text: it empties, and nothing is lost (False: empty)."""
        prompt = self.query_one(PromptInput)
        editing = prompt.editing_item
        if not prompt.text.strip() and editing is None:
            return False
        prompt.discard_draft()
        if editing is not None:
            if self.runtime is not None:
                self.runtime.driver.release(InboxItemId(editing))
            self.app.notify(
                f"Edit dropped: queued prompt #{editing} is unchanged. Up brings it back."
            )
        else:
            self.app.notify("Prompt cleared: Up brings it back.")
        return True

    def last_reply(self) -> str | None:
        """The newest reply on screen, streamed or replayed."""
        replies = self.query("AssistantMessage, PastReply")
        return replies.last().text if replies else None  # type: ignore[attr-defined]
