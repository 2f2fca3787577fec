"""The Textual app: key bindings and commands over a chat screen and a thread controller.

The chat screen (tui.screens.chat) shows one Runtime; the thread controller
(tui.controller) opens, switches and closes it. The app is the engine's
FrontEnd: it switches threads and quits when a command asks, and supplies
the commands only it can carry out (tui.actions). Every command goes
through the engine's registry, so /help, slash completion and the command
palette show one list.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import Worker

from engine.config import Config
from engine.model import ClientFactory, ModelClient
from engine.model.backend import Backend
from engine.runtime import Runtime
from engine.runtime.commands import Command
from engine.threads.draft import keep_draft
from engine.threads.thread import resume_hint
from engine.workspace.listing import list_threads
from tui import code_lexers, drawn_lines
from tui.actions import app_actions
from tui.clipboard import copy_text
from tui.controller import ThreadController
from tui.drawn_lines import DrawnReply, Kept
from tui.messages import CommandEntered
from tui.screens.chat import ChatScreen, ChatSettings
from tui.startup.collection import resume_collection
from tui.widgets.chat_message import PastReply

if TYPE_CHECKING:
    from tui.startup.opening import Opening

QUIT_WINDOW = 3.0
"""Seconds a first Ctrl+C on an empty prompt waits for the second that quits."""
WARM_AFTER = 1.0
"""Seconds after a thread opens before the model client's import is paid."""
COMPLETE_AFTER = 0.1
"""Seconds after the thread's first frame before its continuity is wired (a request or
compaction that comes first wires it itself)."""


_frozen = False


def freeze_long_lived() -> None:
    """Take what exists once the model client is loaded out of the cyclic collector's sight.

    Modules, classes, the SDK's schemas and the open thread live as long as
    the app, yet every full collection walks them all: 250-330 ms pauses of
    the UI loop while a reply streams (its widgets and strips trigger those
    collections). Frozen once, a full collection walks only what was made
    since. Cyclic garbage that exists at this moment is kept for good: a
    one-off, bounded cost against pauses on every long reply. A process-wide
    choice, so the front end makes it, not the engine.
    """
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()


class TroveApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "Trove"
    # The tooltips are what F1 help says of each key (tui.screens.help reads them).
    BINDINGS = [
        Binding(
            "escape",
            "cancel",
            "Cancel",
            tooltip="cancel the running reply or compaction; "
            "twice on an empty prompt: rewind to an earlier prompt",
        ),
        # Esc when there is nothing to cancel (its help is the line above).
        Binding("escape", "escape_idle", show=False),
        Binding(
            "ctrl+c",
            "interrupt",
            "Interrupt",
            show=False,
            priority=True,
            tooltip="cancel what runs; else clear the prompt (Up brings it back); "
            "on an empty prompt, twice to quit",
        ),
        # The prompt's own Ctrl+D runs where it has the focus; this one everywhere else.
        Binding("ctrl+d", "eof", show=False),
        Binding("ctrl+o", "toggle_inspector", "Archive", tooltip="show or hide the archive"),
        Binding("ctrl+t", "threads", "Threads", tooltip="switch to another thread"),
        Binding("ctrl+y", "copy_reply", "Copy reply", tooltip="copy the last reply"),
        Binding("f1", "help", "Help", tooltip="this help"),
        Binding("ctrl+q", "quit", "Quit", priority=True, tooltip="quit"),
    ]

    def __init__(
        self,
        config: Config,
        home: Path,
        *,
        thread_id: str | None = None,
        model: ModelClient | ClientFactory | None = None,
        model_label: str | None = None,
        configured: bool = True,
        clock: Callable[[], float] = time.monotonic,
        new_thread_id: str | None = None,
        config_label: str | None = None,
        backend: Backend | None = None,
        early: Opening | None = None,
    ) -> None:
        super().__init__()
        self._early = early
        """`thread_id`'s open, begun before the app (tui.startup.opening); claimed when it opens."""
        self.config = config
        self.home = home
        self.start_thread = thread_id
        self.new_thread_id = new_thread_id
        self.backend = backend
        self.configured = configured and (backend is None or backend.kind != "none")
        self.settings = ChatSettings(
            clock=clock,
            model_label=model_label or (backend.label if backend else config.model.name),
            configured=self.configured,
            config_label=config_label or str(config.source or home / "config.yaml"),
            backend=backend,
            show_opened=self.show_opened,
        )
        self.chat = ChatScreen(self.settings)
        self.commands_running: list[Worker[Any]] = []
        self.model_override = model
        self.threads: ThreadController | None = None
        """Made when the chat screen is ready, from the settings as they are then."""
        self.theme = config.ui.theme
        self._offered = False
        """Whether the footer offers Esc: not as composed (nothing runs, no pane is open),
        so the first state sync does not rebuild it for nothing."""
        self._switches = 0
        """Thread switches a command asked for that have not happened yet."""
        code_lexers.defer()  # a resumed thread's first frame must not wait for Pygments
        self._switch_notes: list[tuple[str, str]] = []
        self.unsent_text: str | None = None
        """A prompt the app could not keep in the log at quit: printed after the terminal."""
        self.resume_hint: str | None = None
        """`resume with: trove --thread ID` once the app quits in a thread with history."""
        self._quit_armed = False
        """A Ctrl+C on an empty prompt was the last key: the next one quits."""
        self._rewind_armed = False
        """The first Esc of Esc Esc (an empty prompt, nothing to cancel) was the last key."""
        self._disarm_timer: Timer | None = None
        self.typed_at = 0.0
        """When the last key arrived (monotonic): a streaming reply draws less often meanwhile."""

    def get_default_screen(self) -> Screen[Any]:
        return self.chat

    @property
    def runtime(self) -> Runtime | None:
        """The open thread's runtime (None while none is open)."""
        return self.threads.runtime if self.threads is not None else None

    def _controller(self) -> ThreadController:
        self.threads = ThreadController(
            self.config,
            self.home,
            front_end=self,
            attach=self.attach_runtime,
            detach=self.detach_runtime,
            model=self.model_override,
            backend=self.backend,
        )
        return self.threads

    def show_opened(self) -> bool:
        """Called by the chat screen as it mounts: show the thread now, in the screen's
        first frame, when that waits on nothing (a new thread; a thread whose open beside
        the start-up is over), instead of drawing an empty transcript first and the
        thread in a second whole frame. False: the screen's `Ready` opens it, waiting."""
        early = self._early
        if early is None:
            if self.start_thread is not None:
                return False
            self._controller().start_new(self.new_thread_id)
            return True
        if early.opened() is None or not early.claim():
            return False
        return self._controller().start_opened(early)

    async def on_chat_screen_ready(self, message: ChatScreen.Ready) -> None:
        early = self._early
        opening = early if early is not None and early.claim() else None
        problem = await self._controller().open_first(
            self.start_thread, self.new_thread_id, opening=opening
        )
        if problem is not None:
            self.call_after_refresh(self._cannot_open, problem)

    def _cannot_open(self, problem: str) -> None:
        self.chat.notice(
            f"Could not open that thread: {problem}. Nothing was changed; repair or remove "
            "that line of the log to open it. You are in a new thread.",
            "error",
        )

    def attach_runtime(self, runtime: Runtime, kept: Kept | None = None) -> None:
        # The thread is replayed: start-up's long-lived objects are all made
        # (tui.startup.collection).
        # Before its messages are built: their Markdown makes short-lived cycles.
        resume_collection()
        self.chat.attach_runtime(runtime, kept)
        # The archive, tools and notes: not needed to draw, so wired after the first frame
        # (a request or compaction before that would wire them itself).
        self.call_after_refresh(lambda: self.set_timer(COMPLETE_AFTER, runtime.complete))
        if code_lexers.deferring():
            self.call_after_refresh(
                lambda: self.set_timer(COMPLETE_AFTER, self._highlight_code, name="lexers")
            )
        # After the first frames, not during them: the import competes for the GIL.
        self.set_timer(WARM_AFTER, lambda: self._warm(runtime))

    def detach_runtime(self, runtime: Runtime) -> None:
        self.chat.detach_runtime(runtime)

    @work(thread=True, group="lexers", exit_on_error=False)
    def _highlight_code(self) -> None:
        """The lexers of the code drawn plain at start-up, built off the loop (tui.code_lexers);
        then that code is drawn again, highlighted."""
        try:
            code_lexers.build_wanted()
        finally:
            self.call_from_thread(self._code_highlighted)

    def _code_highlighted(self) -> None:
        code_lexers.finish()
        for reply in self.chat.query(PastReply):
            if reply.plain_code:
                reply.refresh(layout=True)

    @work(group="warm", exit_on_error=False)
    async def _warm(self, runtime: Runtime) -> None:
        """Pay the model client's import before the first prompt, not on it (a worker that
        makes its coroutine as it starts: one a quit cancels first leaves none unawaited)."""
        prepare = getattr(runtime.model, "prepare", None)
        if prepare is not None:
            await prepare()
        freeze_long_lived()

    async def switch_thread(self, thread_id: str | None) -> None:
        """Open another thread (or a new one), then close this one; its queue stays in its log."""
        if self.threads is None:
            return
        problem = await self.threads.switch(thread_id)
        if problem is not None:
            self.chat.notice(
                f"Could not open that thread: {problem}. Nothing was changed; you are still here.",
                "error",
            )

    async def _switch_for_command(self, thread_id: str | None) -> None:
        try:
            await self.switch_thread(thread_id)
        finally:
            self._switches -= 1
        # What the command that switched said (/fork's "Forked into …"), in the view
        # the user now looks at, not in the one just cleared.
        while self._switch_notes and not self._switches:
            self.chat.notice(*self._switch_notes.pop(0))

    # -- FrontEnd (engine.runtime.commands) ---------------------------------------------------

    def open_thread(self, thread_id: str | None) -> None:
        self._switches += 1
        self.call_later(self._switch_for_command, thread_id)

    def quit(self) -> None:
        self.call_later(self.action_quit)

    def actions(self) -> Iterable[Command]:
        return app_actions(self)

    # -- the Shell of tui.actions -------------------------------------------------------

    def show_help(self) -> None:
        self.call_later(self.action_help)

    def choose_thread(self) -> None:
        self.call_later(self.action_threads)

    def choose_rewind(self) -> None:
        self.call_later(self.action_rewind)

    def rewind_to(self, args: str) -> None:
        from engine.runtime.builtin import rewind_numbered

        if self.runtime is not None:
            self.chat.prefill(rewind_numbered(self.runtime, args).text)

    async def toggle_inspector(self) -> None:
        await self.chat.toggle_inspector()

    def last_reply(self) -> str | None:
        return self.chat.last_reply()

    def copy(self, text: str) -> str:
        return copy_text(self, text)

    # -- commands -------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        if self.runtime is None:
            return False
        running = any(w.is_running for w in self.commands_running)
        return running or self.runtime.driver.running_turn is not None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            # The footer shows "Esc Cancel" only while something runs (or to close the pane).
            return self.busy or self.chat.inspector_shown
        if action == "escape_idle":
            return not (self.busy or self.chat.inspector_shown)
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
            self.refresh_bindings()

    def command_list(self) -> list[tuple[str, str]]:
        if self.runtime is None:
            return []
        return [(c.name, c.summary) for c in self.runtime.commands]

    def on_command_entered(self, message: CommandEntered) -> None:
        message.stop()
        self.run_command(message.text)

    def run_command(self, text: str) -> None:
        worker = self.run_worker(self._command(text), group="commands", exit_on_error=False)
        self.commands_running.append(worker)
        self.sync_bindings()

    async def _command(self, text: str) -> None:
        assert self.runtime is not None
        try:
            result = await self.runtime.commands.run(text)
        except asyncio.CancelledError:
            self.chat.notice(
                "Cancelled. The conversation is as it was; nothing you typed was lost.", "warning"
            )
            raise
        finally:
            self.commands_running = [w for w in self.commands_running if w.is_running]
            self.call_later(self.sync_bindings)
        if result.shown:
            note = (result.text, "success" if result.ok else "error")
            if self._switches:
                self._switch_notes.append(note)
            else:
                self.chat.notice(*note)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for name, summary in self.command_list():
            yield SystemCommand(f"/{name}", summary, lambda n=name: self.run_command(f"/{n}"))

    # -- actions ---------------------------------------------------------------------------

    def _cancel_running(self) -> bool:
        """Cancel the newest running command (a /compact), else the running turn."""
        running = [w for w in self.commands_running if w.is_running]
        if running:
            running[-1].cancel()
            return True
        return self.runtime is not None and self.runtime.driver.cancel()

    def action_cancel(self) -> None:
        self._rewind_armed = False
        if not self._cancel_running() and self.chat.inspector_shown:
            self.call_later(self.chat.show_inspector, False)

    def action_escape_idle(self) -> None:
        """Esc Esc on an empty prompt with nothing running: the rewind picker."""
        armed, self._rewind_armed = self._rewind_armed, False
        if not self.chat.prompt_empty():
            return
        if armed:
            self.choose_rewind()
        else:
            self._rewind_armed = True  # the next key that is not Esc disarms it

    def action_interrupt(self) -> None:
        """Ctrl+C as terminal chat apps have it: stop what runs, else clear, else quit."""
        armed, self._quit_armed = self._quit_armed, False
        if self._cancel_running():
            return
        # Text selected in a text box, or with the mouse on screen: Ctrl+C copies it.
        selected = getattr(self.focused, "selected_text", "") or self.screen.get_selected_text()
        if selected:
            copy_text(self, selected)
            self.notify("Copied the selected text.")
            return
        if self.chat.clear_draft():
            return
        if armed:
            self.call_later(self.action_quit)
            return
        self._quit_armed = True
        self.notify("Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)
        if self._disarm_timer is not None:
            self._disarm_timer.stop()
        self._disarm_timer = self.set_timer(QUIT_WINDOW, self._disarm)

    def _disarm(self) -> None:
        self._quit_armed = False

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.typed_at = time.monotonic()
        if isinstance(event, events.Key) and event.key != "ctrl+c":
            self._quit_armed = False  # the second Ctrl+C must come next to quit
        if isinstance(event, events.Key) and event.key != "escape":
            self._rewind_armed = False  # so must the second Esc, to rewind
        if isinstance(event, events.Key) and event.key != "ctrl+z":
            self.chat.forget_removed()  # and Ctrl+Z, to undo a removal from the queue
        await super().on_event(event)

    async def action_eof(self) -> None:
        """Ctrl+D with the focus off the prompt: as on the prompt, quit when it is empty."""
        if not self.chat.unsent_text():
            await self.action_quit()

    async def action_toggle_inspector(self) -> None:
        await self.chat.toggle_inspector()

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        commands: Iterable[Command] = [] if self.runtime is None else self.runtime.commands
        listed = [(f"{c.name} {c.usage}".rstrip(), c.summary) for c in commands]
        self.push_screen(HelpScreen(listed, self._help_notes()))

    def _help_notes(self) -> str:
        if not self.configured:
            return "No model is configured yet: see the panel in the transcript."
        if self.backend is not None and not self.backend.tools_enabled:
            return (
                "This model gets no tools (task_note, history_search, history_read): "
                "set model.tools: on to offer them. /compact, the archive and the "
                "inspector still work."
            )
        return ""

    @work(exclusive=True, group="threads")
    async def action_threads(self) -> None:
        if self.runtime is None:
            return
        from tui.screens.threads import ThreadsScreen

        threads = await asyncio.to_thread(list_threads, self.home, self.config.user_id)
        chosen = await self.push_screen_wait(ThreadsScreen(threads, self.runtime.thread.id))
        if chosen and chosen != self.runtime.thread.id:
            await self.switch_thread(chosen)

    @work(exclusive=True, group="rewind")
    async def action_rewind(self) -> None:
        await self.chat.pick_and_rewind()

    def action_copy_reply(self) -> None:
        text = self.last_reply()
        if text is None:
            self.notify("No reply to copy yet.")
            return
        self.notify(copy_text(self, text, "the last reply"))

    async def on_unmount(self) -> None:
        code_lexers.finish()  # whatever draws code after this app, draws it as Rich does
        self._note_resume()
        if self.threads is not None:
            await self.threads.close()

    async def action_quit(self) -> None:
        self._keep_draft()
        self._note_resume()
        drawn = self._drawn_replies()
        if self.threads is not None:
            await self.threads.close()
        if drawn is not None:
            await asyncio.to_thread(drawn_lines.save, *drawn)
        self.exit(0)

    def _drawn_replies(self) -> tuple[Path, list[DrawnReply]] | None:
        """The newest replies' lines as drawn, for the next open's first screen
        (tui.drawn_lines); not for a read-only view, whose thread another Trove writes."""
        runtime = self.runtime
        if runtime is None or runtime.thread.read_only or not runtime.thread.log.exists:
            return None
        return runtime.thread.dir, self.chat.drawn_replies()

    def _keep_draft(self) -> None:
        """What the prompt holds, unsent, is kept in the thread's log for its next open
        (engine.threads.draft); when the log cannot take it, it is printed once the terminal is
        restored, so quitting loses nothing the user typed."""
        text = self.chat.unsent_text()
        runtime = self.runtime
        if runtime is not None and keep_draft(runtime.thread.log, text):
            return
        if text.strip():
            self.unsent_text = text

    def _note_resume(self) -> None:
        """The way back, printed once the terminal is restored (`tui.startup.run`): only for a
        thread with history (one that never got a message is not on disk)."""
        runtime = self.runtime
        if runtime is not None and runtime.thread.has_history:
            thread = runtime.thread
            self.resume_hint = resume_hint(thread.id, home=thread.home, user_id=thread.user_id)
