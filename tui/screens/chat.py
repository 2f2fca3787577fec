"""The chat screen: transcript, status strip, prompt, and the archive inspector.

It is a view over the one Runtime it is attached to, which its thread
controller opens, switches and closes. Everything the engine says reaches it
as a Message from the bridge (tui.bridge), never as a call from inside the
engine; what the user types goes to the driver, or runs as a command. It is
the engine's FrontEnd and the Shell of the commands only it can carry out
(tui.actions). Its parts, one concern each: the thread as drawn
(thread_view), commands (command_runner), the queue (queue_editor), the
prompt's drafts (prompt_drafts), the inspector (inspector_pane), stray text
(stray_text) and what follows a thread's first frame (warm_up).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen

from engine.driver import DriverClosedError
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
from engine.runtime import Runtime
from engine.runtime.commands import Command, is_command
from engine.threads.thread import resume_hint
from tui.actions import app_actions
from tui.bridge import (
    Bridge,
    EngineFailed,
    EngineMessage,
    EngineStateChanged,
    EngineWaiting,
    LogEventAppended,
    ReplyStreamed,
)
from tui.clipboard import copy_text
from tui.drawn_lines import DrawnReply, Kept
from tui.messages import (
    CloseInspector,
    OpenBatch,
    OpenThread,
    PromptSubmitted,
    QueueItemEdit,
    QueueItemRemove,
)
from tui.screens.chat_settings import ChatSettings
from tui.screens.command_runner import CommandRunner
from tui.screens.inspector_pane import InspectorPane
from tui.screens.prompt_drafts import PromptDrafts
from tui.screens.queue_editor import QueueEditor
from tui.screens.stray_text import StrayText
from tui.screens.thread_controller import ThreadController
from tui.screens.thread_view import ThreadView
from tui.screens.warm_up import warm_up
from tui.startup.collection import resume_collection
from tui.widgets.key_footer import KeyFooter
from tui.widgets.new_output import NewOutputMarker
from tui.widgets.prompt_input import PromptInput
from tui.widgets.slash_menu import SlashMenu
from tui.widgets.status_strip import QueueList, StatusStrip
from tui.widgets.title_bar import TitleBar
from tui.widgets.transcript import Transcript
from tui.widgets.welcome import placeholder


class ChatScreen(Screen[None]):
    CSS_PATH = "chat.tcss"
    # Tab from the prompt goes to the queue while prompts wait in it (README, help);
    # otherwise, and from anywhere else, it moves the focus as usual. More of this screen's
    # keys are bound on the app, for their order in the footer and help (tui.app).
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
        # The prompt's own Ctrl+D runs where it has the focus; this one everywhere else.
        Binding("ctrl+d", "eof", show=False),
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
        self.threads: ThreadController | None = None
        """Opens, switches and closes the thread shown (the app makes it as this mounts)."""
        self.runtime: Runtime | None = None
        self._bridge: Bridge | None = None
        self._view = ThreadView(self, settings, self.sync_bindings)
        self._commands = CommandRunner(self, lambda: self.runtime, self.notice, self.sync_bindings)
        self._queue = QueueEditor(self, self._notice)
        self._drafts = PromptDrafts(self)
        self._inspector = InspectorPane(self, lambda: self.busy, self.sync_bindings)
        self._strays = StrayText(self, self._inspector)
        self._hinted = False
        """Whether the user was told, once, how to steer instead of queueing."""
        self._rewind_armed = False
        """The first Esc of Esc Esc (an empty prompt, nothing to cancel) was the last key."""
        self._offered = False
        """Whether the footer offers Esc: not as composed (nothing runs, no pane is open),
        so the first state sync does not rebuild it for nothing."""

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
        """Show this thread: its log so far, then whatever the engine says about it."""
        # Start-up's long-lived objects are all made (tui.startup.collection); before the
        # messages are built: their Markdown makes short-lived cycles.
        resume_collection()
        self.runtime = runtime
        self._bridge = Bridge(
            runtime, self, lambda _, notification, exc: self._display_failed(notification, exc)
        )
        self._view.show(runtime, kept)
        self._drafts.restore(runtime)
        self._view.context(runtime)
        self._view.state(runtime.state())
        self._inspector.bind(runtime)
        warm_up(self, runtime)

    def detach_runtime(self, runtime: Runtime) -> None:
        """The closing runtime's late notifications must not reach widgets being torn down."""
        if self._bridge is not None and self._bridge.runtime is runtime:
            self._bridge.close()
            self._bridge = None
        if self.runtime is runtime:
            self.runtime = None

    async def switch_thread(self, thread_id: str | None) -> None:
        """Open another thread (or a new one), then close this one; its queue stays in its log."""
        if self.threads is None:
            return
        problem = await self.threads.switch(thread_id)
        if problem is not None:
            self.notice(
                f"Could not open that thread: {problem}. Nothing was changed; you are still here.",
                "error",
            )

    async def _switch_for_command(self, thread_id: str | None) -> None:
        try:
            await self.switch_thread(thread_id)
        finally:
            self._commands.switch_over()

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
            self.notify(f"Display error ({type(exc).__name__}); the session goes on.")

    # -- engine → widgets ---------------------------------------------------------------

    def on_log_event_appended(self, message: LogEventAppended) -> None:
        if self._current(message):
            try:
                self._on_log_event(message.event)
            except Exception as exc:  # a widget bug must not end the session
                self._display_failed(message, exc)

    def on_reply_streamed(self, message: ReplyStreamed) -> None:
        if self._current(message):
            if self._view.waiting and self.runtime is not None:
                self._view.waiting = ""
                self._view.state(self.runtime.state(), restart=False)
            try:
                self.query_one(Transcript).delta(message.take())
            except Exception as exc:
                self._display_failed(message, exc)

    def on_engine_state_changed(self, message: EngineStateChanged) -> None:
        if self._current(message):
            self._view.state(message.state)

    def on_engine_waiting(self, message: EngineWaiting) -> None:
        if self._current(message):
            assert self.runtime is not None
            self._view.waiting = message.text
            self._view.state(self.runtime.state(), restart=False)

    def on_engine_failed(self, message: EngineFailed) -> None:
        """The engine could not record a failure in the log (the disk): show it here."""
        if self._current(message):
            self._notice(f"✗ {message.text}", "error")

    def _on_log_event(self, event: LogEvent) -> None:
        runtime = self.runtime
        assert runtime is not None
        if isinstance(event, SessionRewind):
            self._view.rewound(runtime)
            self._inspector.refresh_data()
            return
        self.query_one(Transcript).show_event(event)
        if isinstance(event, AssistantMessage | UserMessage | ToolResult | CompactEnd):
            self._view.context(runtime)
        if isinstance(event, TurnEnd) and event.withdrawn:
            self._drafts.restore_withdrawn(runtime, event)
        if isinstance(event, CompactEnd | NoteSet | NoteDelete):
            self._inspector.refresh_data()

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
            self.call_later(self.run_command, text)
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
                self._queue.save(driver, prompt.editing_item, text)
                return
            if message.steer and not driver.accepts_next_step:
                self.notify("Nothing to steer right now: sent as a queued follow-up.")
            elif not message.steer and driver.running_turn is not None and not self._hinted:
                # Alt+Enter arrives as a plain Enter in tmux: say once how to steer instead.
                self._hinted = True
                self.notify("Queued after this reply. Ctrl+S (or /steer TEXT) steers it instead.")
            driver.send(text, placement="next-step" if message.steer else "follow-up")
        except (OSError, DriverClosedError) as exc:
            # Not accepted (a full disk, a read-only view): the text goes back.
            prompt.give_back(text)
            self._notice(f"Not sent: {exc}. Your text is back in the input.", "error")

    @on(PromptInput.Changed)
    def _prompt_changed(self, event: PromptInput.Changed) -> None:
        text = self.query_one(PromptInput).text
        menu = self.query_one(SlashMenu)
        if text.startswith("/") and " " not in text and "\n" not in text:
            menu.show_for(text[1:].lower(), self.command_list())
        else:
            menu.hide()

    @on(QueueItemRemove)
    def _remove_item(self, message: QueueItemRemove) -> None:
        message.stop()
        if self.runtime is not None:
            self._queue.remove(self.runtime.driver, message.item_id)

    @on(QueueItemEdit)
    def _edit_item(self, message: QueueItemEdit) -> None:
        message.stop()
        if self.runtime is not None:
            self._queue.edit(self.runtime.driver, message.item_id)

    @on(OpenBatch)
    async def _open_batch(self, message: OpenBatch) -> None:
        message.stop()
        await self._inspector.open_batch(message.batch, self.runtime)

    @on(CloseInspector)
    async def _close_inspector(self, message: CloseInspector) -> None:
        message.stop()
        await self.show_inspector(False)

    @on(OpenThread)
    def _open_thread(self, message: OpenThread) -> None:
        message.stop()
        self.open_thread(message.thread_id)

    @on(NewOutputMarker.Jump)
    def _jump(self, message: NewOutputMarker.Jump) -> None:
        message.stop()
        self.query_one(Transcript).jump_to_end()

    def on_key(self, event: events.Key) -> None:
        self._strays.key(event)

    def on_paste(self, event: events.Paste) -> None:
        self._strays.paste(event)

    def on_resize(self) -> None:
        self._inspector.resized()

    # -- commands ---------------------------------------------------------------------------

    def command_list(self) -> list[tuple[str, str]]:
        """Every command of the open thread as (name, summary)."""
        if self.runtime is None:
            return []
        return [(command.name, command.summary) for command in self.runtime.commands]

    def run_command(self, text: str) -> None:
        self._commands.run(text)

    @property
    def busy(self) -> bool:
        """A reply, a compaction or a command runs (Esc cancels it)."""
        if self.runtime is None:
            return False
        return self._commands.running or self.runtime.driver.running_turn is not None

    def cancel_running(self) -> bool:
        """Cancel the newest running command (a /compact), else the running turn."""
        if self._commands.cancel_newest():
            return True
        return self.runtime is not None and self.runtime.driver.cancel()

    # FrontEnd (engine.runtime.commands)

    def open_thread(self, thread_id: str | None) -> None:
        self._commands.switch_asked()
        self.call_later(self._switch_for_command, thread_id)

    def quit(self) -> None:
        self.call_later(self.app.action_quit)

    def actions(self) -> Iterable[Command]:
        return app_actions(self)

    # the Shell of tui.actions

    def show_help(self) -> None:
        self.call_later(self.action_help)

    def choose_thread(self) -> None:
        self.call_later(self.action_threads)

    def choose_rewind(self) -> None:
        self.call_later(self.action_rewind)

    def rewind_to(self, args: str) -> None:
        from engine.runtime.builtin import rewind_numbered

        if self.runtime is not None:
            self.prefill(rewind_numbered(self.runtime, args).text)

    async def toggle_inspector(self) -> None:
        await self.show_inspector(not self.inspector_shown)

    def last_reply(self) -> str | None:
        """The newest reply on screen, streamed or replayed."""
        replies = self.query("AssistantMessage, PastReply")
        return replies.last().text if replies else None  # type: ignore[attr-defined]

    def copy(self, text: str) -> str:
        return copy_text(self.app, text)

    # -- keys --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            # The footer shows "Esc Cancel" only while something runs (or to close the pane).
            return self.busy or self.inspector_shown
        if action == "escape_idle":
            return not (self.busy or self.inspector_shown)
        if action == "focus_queue":
            queue = self.query_one(QueueList)
            return queue.option_count > 0 and self.focused is self.query_one(PromptInput)
        if action == "undo_remove":
            return self._queue.undo_item is not None
        return True

    def sync_bindings(self) -> None:
        """Refresh the footer only when what it offers changes.

        A refresh rebuilds every key of the footer and restyles it; state
        changes (a turn starting, a delta, the queue) come many times a second
        and almost never change which actions are available.
        """
        offered = bool(self.check_action("cancel", ()))
        if offered != self._offered:
            self._offered = offered
            self.app.refresh_bindings()  # Esc is bound on the app

    def key_seen(self, key: str) -> None:
        """Every key, as it arrives: the second key of a pair must come next."""
        if key != "escape":
            self._rewind_armed = False  # the second Esc, to rewind
        if key != "ctrl+z":
            self._queue.forget_removed()  # and Ctrl+Z, to undo a removal from the queue

    def action_cancel(self) -> None:
        self._rewind_armed = False
        if not self.cancel_running() and self.inspector_shown:
            self.call_later(self.show_inspector, False)

    def action_escape_idle(self) -> None:
        """Esc Esc on an empty prompt with nothing running: the rewind picker."""
        armed, self._rewind_armed = self._rewind_armed, False
        prompt = self.query_one(PromptInput)
        if self.focused is not prompt or prompt.text.strip():
            return
        if armed:
            self.choose_rewind()
        else:
            self._rewind_armed = True  # the next key that is not Esc disarms it

    async def action_eof(self) -> None:
        """Ctrl+D with the focus off the prompt: as on the prompt, quit when it is empty."""
        if not self.unsent_text():
            await self.app.action_quit()

    def action_focus_queue(self) -> None:
        self.query_one(QueueList).focus()

    def action_undo_remove(self) -> None:
        self._queue.undo_remove(self.runtime.driver if self.runtime is not None else None)

    async def action_toggle_inspector(self) -> None:
        await self.toggle_inspector()

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen, help_bindings, help_notes

        commands: Iterable[Command] = [] if self.runtime is None else self.runtime.commands
        listed = [(f"{c.name} {c.usage}".rstrip(), c.summary) for c in commands]
        keys = help_bindings(type(self.app), type(self))
        notes = help_notes(self.settings.configured, self.settings.backend)
        self.app.push_screen(HelpScreen(listed, keys, notes))

    @work(exclusive=True, group="threads")
    async def action_threads(self) -> None:
        from tui.screens.threads import choose_thread

        if self.runtime is None:
            return
        chosen = await choose_thread(self.app, self.runtime)
        if chosen and self.runtime is not None and chosen != self.runtime.thread.id:
            await self.switch_thread(chosen)

    @work(exclusive=True, group="rewind")
    async def action_rewind(self) -> None:
        from tui.screens.rewind import pick_and_rewind

        text = await pick_and_rewind(self, lambda: self.runtime)
        if text is not None:
            self.prefill(text)

    def action_copy_reply(self) -> None:
        text = self.last_reply()
        if text is None:
            self.notify("No reply to copy yet.")
            return
        self.notify(copy_text(self.app, text, "the last reply"))

    # -- the prompt and the pane -------------------------------------------------------

    def prefill(self, text: str) -> None:
        """Put a prompt's text in the input, ready to edit and send."""
        prompt = self.query_one(PromptInput)
        prompt.set_value(text)
        prompt.focus()

    def unsent_text(self) -> str:
        """What the prompt holds, typed and not sent."""
        return self._drafts.unsent()

    def clear_draft(self) -> bool:
        """Ctrl+C on a prompt with text: it empties, and nothing is lost (False: empty)."""
        return self._drafts.clear(self.runtime)

    @property
    def inspector_shown(self) -> bool:
        return self._inspector.shown

    async def show_inspector(self, show: bool) -> None:
        await self._inspector.show(show, self.runtime)

    # -- leaving -------------------------------------------------------------------------

    def keep_draft(self) -> str | None:
        """The unsent prompt into the thread's log; what could not be kept there (None: all
        was), for the app to print once the terminal is restored."""
        return self._drafts.keep(self.runtime)

    def way_back(self) -> str | None:
        """`resume with: trove --thread ID`, for a thread with history (one that never got
        a message is not on disk)."""
        runtime = self.runtime
        if runtime is None or not runtime.thread.has_history:
            return None
        thread = runtime.thread
        return resume_hint(thread.id, home=thread.home, user_id=thread.user_id)

    def drawn_replies(self) -> tuple[Path, list[DrawnReply]] | None:
        """The newest replies' lines as drawn, for the next open's first screen
        (tui.drawn_lines); not for a read-only view, whose thread another Trove writes."""
        runtime = self.runtime
        if runtime is None or runtime.thread.read_only or not runtime.thread.log.exists:
            return None
        return runtime.thread.dir, self.query_one(Transcript).to_keep()

    async def close(self) -> None:
        if self.threads is not None:
            await self.threads.close()
