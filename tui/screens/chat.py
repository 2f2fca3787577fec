"""The chat screen: transcript, status strip, prompt, and the archive inspector.

It is a view over the one Runtime it is attached to, which its thread
controller opens, switches and closes. Everything the engine says reaches it
as a Message from the bridge (tui.bridge), never as a call from inside the
engine; what the user types goes to the driver, or runs as a command. The
screen routes messages and keys to its parts, one concern each, beside it in
tui/screens: the thread as drawn (thread_view), sending the prompt
(prompt_sender), commands (command_runner) and what they ask of the screen
(front_end), the queue (queue_editor), the prompt's drafts (prompt_drafts),
Esc and Ctrl+C (cancel_keys), the inspector (inspector_pane), stray text (stray_text),
and what follows a thread's first frame (warm_up); as an `EchoingScreen` (input_echo)
it draws a key's frame at once. Over 400 lines: the one place where those parts meet,
each message routed in a few lines.
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

from engine.model.backend import Backend
from engine.runtime import Runtime
from engine.runtime.commands import Command
from tui import bridge
from tui.clipboard import copy_text
from tui.drawn_lines import DrawnReply, Kept
from tui.messages import (
    CloseInspector,
    OpenBatch,
    OpenThread,
    PromptSubmitted,
    QueueItemEdit,
    QueueItemRemove,
    ScrollTranscript,
)
from tui.screens.cancel_keys import CancelKeys
from tui.screens.chat_settings import ChatSettings
from tui.screens.command_runner import CommandRunner
from tui.screens.front_end import ChatFrontEnd
from tui.screens.input_echo import EchoingScreen
from tui.screens.inspector_pane import InspectorPane
from tui.screens.prompt_drafts import PromptDrafts
from tui.screens.prompt_sender import PromptSender
from tui.screens.queue_editor import QueueEditor
from tui.screens.stray_text import StrayText
from tui.screens.thread_controller import ThreadController
from tui.screens.thread_view import ThreadView
from tui.screens.toast_room import keep_toasts_above
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


class ChatScreen(EchoingScreen[None]):
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
        self._bridge: bridge.Bridge | None = None
        self._commands = CommandRunner(self, lambda: self.runtime, self.notice, self.sync_bindings)
        self._queue = QueueEditor(self, self._notice)
        self._drafts = PromptDrafts(self)
        self._inspector = InspectorPane(self, lambda: self._commands.busy, self.sync_bindings)
        self._keys = CancelKeys(
            self, lambda: self.runtime, (self._commands, self._drafts, self._inspector)
        )
        self._view = ThreadView(self, settings, self._drafts, self._inspector, self.sync_bindings)
        self._sender = PromptSender(
            self, settings.configured, self._queue, self.run_command, self._notice
        )
        self._strays = StrayText(self, self._inspector)
        parts = (self._commands, self._view, self._drafts, self._inspector)
        self.front_end = ChatFrontEnd(
            self, lambda: self.runtime, self.switch_thread, parts, self._model_changed
        )
        """The engine's FrontEnd for this screen's threads, and the Shell of tui.actions."""

    def compose(self) -> ComposeResult:
        yield TitleBar()
        with Horizontal(id="body"), Vertical(id="chat"):
            transcript = Transcript(id="transcript")
            transcript.max_width = self.settings.max_width
            yield transcript
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
        keep_toasts_above(self, self.query_one(SlashMenu), prompt)
        if not self.settings.show_opened():
            self.post_message(self.Ready())

    # -- following a runtime ------------------------------------------------------------

    def attach_runtime(self, runtime: Runtime, kept: Kept | None = None) -> None:
        """Show this thread: its log so far, then whatever the engine says about it."""
        # Start-up's long-lived objects are all made (tui.startup.collection); before the
        # messages are built: their Markdown makes short-lived cycles.
        resume_collection()
        self.runtime = runtime
        self._bridge = bridge.Bridge(
            runtime, self, lambda _, notification, exc: self._display_failed(notification, exc)
        )
        self._view.show(runtime, kept)
        warm_up(self, runtime)

    def detach_runtime(self, runtime: Runtime) -> None:
        """The closing runtime's late notifications must not reach widgets being torn down."""
        if self._bridge is not None and self._bridge.runtime is runtime:
            self._bridge.close()
            self._bridge = None
        if self.runtime is runtime:
            self.runtime = None
            self._view.release_hold()

    def on_unmount(self) -> None:
        self._view.release_hold()

    def _model_changed(self, backend: Backend) -> None:
        """/model switched the model: threads opened from now on use it."""
        if self.threads is not None:
            self.threads.use_model(backend)

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

    def notice(self, text: str, variant: str = "") -> None:
        """A notice from outside the engine's flow (a command's result): it is queued behind
        what the engine said before it, so it lands after, e.g., the checkpoint /compact wrote."""
        self.post_message(self.ShowNotice(text, variant))

    def on_chat_screen_show_notice(self, message: ShowNotice) -> None:
        self._notice(message.text, message.variant)

    def _notice(self, text: str, variant: str = "") -> None:
        self.query_one(Transcript).notice(text, variant)

    def _sender_of(self, message: bridge.EngineMessage) -> Runtime | None:
        """The attached runtime, when `message` is from it: the rest were queued before a
        switch."""
        message.stop()
        return self.runtime if message.bridge is self._bridge else None

    def _display_failed(self, what: object, exc: Exception) -> None:
        """Showing something the engine said failed: the engine went on; the user hears
        of it once."""
        self.log.error(f"display of {type(what).__name__} failed: {exc!r}")
        if self.app.is_running and self.runtime is not None:
            self.notify(f"Display error ({type(exc).__name__}); the session goes on.")

    # -- engine → widgets ---------------------------------------------------------------

    def on_log_event_appended(self, message: bridge.LogEventAppended) -> None:
        if (runtime := self._sender_of(message)) is not None:
            try:
                self._view.event(runtime, message.event)
            except Exception as exc:  # a widget bug must not end the session
                self._display_failed(message, exc)

    def on_reply_streamed(self, message: bridge.ReplyStreamed) -> None:
        if (runtime := self._sender_of(message)) is not None:
            try:
                self._view.streamed(runtime, message.take())
            except Exception as exc:
                self._display_failed(message, exc)

    def on_reasoning_streamed(self, message: bridge.ReasoningStreamed) -> None:
        if (runtime := self._sender_of(message)) is not None:
            try:
                self._view.thought(runtime, message.take())
            except Exception as exc:
                self._display_failed(message, exc)

    def on_engine_state_changed(self, message: bridge.EngineStateChanged) -> None:
        if self._sender_of(message) is not None:
            self._view.state(message.state)

    def on_engine_waiting(self, message: bridge.EngineWaiting) -> None:
        if (runtime := self._sender_of(message)) is not None:
            self._view.waiting_on(runtime, message.text)

    def on_engine_failed(self, message: bridge.EngineFailed) -> None:
        """The engine could not record a failure in the log (the disk): show it here."""
        if self._sender_of(message) is not None:
            self._notice(f"✗ {message.text}", "error")

    # -- widgets → engine ----------------------------------------------------------------

    @on(PromptSubmitted)
    def _submitted(self, message: PromptSubmitted) -> None:
        message.stop()
        self._sender.send(self.runtime, message.text, steer=message.steer)

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
        await self._inspector.show(False, self.runtime)

    @on(OpenThread)
    def _open_thread(self, message: OpenThread) -> None:
        message.stop()
        self.front_end.open_thread(message.thread_id)

    @on(NewOutputMarker.Jump)
    def _jump(self, message: NewOutputMarker.Jump) -> None:
        message.stop()
        self.query_one(Transcript).jump_to_end()

    @on(ScrollTranscript)
    def _scroll_transcript(self, message: ScrollTranscript) -> None:
        message.stop()
        self.query_one(Transcript).scroll_key(message.action)

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

    # -- keys --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            return self._keys.esc_cancels
        if action == "escape_idle":
            return not self._keys.esc_cancels
        if action == "focus_queue":
            queue = self.query_one(QueueList)
            return queue.option_count > 0 and self.focused is self.query_one(PromptInput)
        if action == "undo_remove":
            return self._queue.undo_item is not None
        return True

    def sync_bindings(self) -> None:
        self._keys.sync()

    def key_seen(self, key: str) -> None:
        """Every key, as it arrives: the second key of a pair must come next."""
        self._keys.seen(key)
        if key != "ctrl+z":
            self._queue.forget_removed()  # Ctrl+Z undoes a removal from the queue only next

    def action_cancel(self) -> None:
        self._keys.escape()

    def action_escape_idle(self) -> None:
        self._keys.escape_idle()

    def action_interrupt(self) -> None:
        self._keys.interrupt()

    async def action_eof(self) -> None:
        """Ctrl+D with the focus off the prompt: as on the prompt, quit when it is empty."""
        if not self.unsent_text():
            await self.app.action_quit()

    def action_focus_queue(self) -> None:
        self.query_one(QueueList).focus()

    def action_undo_remove(self) -> None:
        self._queue.undo_remove(self.runtime.driver if self.runtime is not None else None)

    async def action_toggle_inspector(self) -> None:
        await self.front_end.toggle_inspector()

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen, help_bindings, help_notes

        commands: Iterable[Command] = [] if self.runtime is None else self.runtime.commands
        self.app.push_screen(
            HelpScreen(
                [(f"{c.name} {c.usage}".rstrip(), c.summary) for c in commands],
                help_bindings(type(self.app), type(self)),
                help_notes(self.settings.configured, self.settings.backend),
            )
        )

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
            self._drafts.prefill(text)

    def action_copy_reply(self) -> None:
        text = self._view.last_reply()
        if text is None:
            self.notify("No reply to copy yet.")
            return
        copy_text(self.app, text, "the last reply")  # a toast says where it went

    # -- the prompt and the pane -------------------------------------------------------

    def unsent_text(self) -> str:
        """What the prompt holds, typed and not sent."""
        return self._drafts.unsent()

    @property
    def inspector_shown(self) -> bool:
        return self._inspector.shown

    # -- leaving -------------------------------------------------------------------------

    def keep_draft(self) -> str | None:
        """The unsent prompt into the thread's log; what could not be kept there (None: all
        was), for the app to print once the terminal is restored."""
        return self._drafts.keep(self.runtime)

    def drawn_replies(self) -> tuple[Path, list[DrawnReply]] | None:
        """The newest replies' lines as drawn, for the next open's first screen."""
        return self._view.drawn(self.runtime) if self.runtime is not None else None

    async def close(self) -> None:
        if self.threads is not None:
            await self.threads.close()
