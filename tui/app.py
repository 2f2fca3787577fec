"""The Textual app: the config, the keys, and the screen stack over one chat screen.

The chat screen (tui.screens.chat) does the work: it shows a thread, runs
commands and switches threads. The app makes it from the config, opens the
first thread as it mounts, holds the key table, and quits: what the chat
screen could not keep is printed once the terminal is restored
(tui.startup.run).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.theme import Theme

from engine.config import Config
from engine.model import ClientFactory, ModelClient
from engine.model.backend import Backend
from engine.runtime import Runtime
from engine.threads.thread import resume_hint
from tui import code_lexers, drawn_lines
from tui.live import collection
from tui.screens.chat import ChatScreen
from tui.screens.chat_settings import ChatSettings
from tui.screens.input_echo import ECHOED, EchoingScreen
from tui.screens.thread_controller import ThreadController
from tui.screens.warm_up import warmed
from tui.typed import TypingApp
from tui.ui_state import UiState, load_state, save_state, theme_to_use
from tui.widgets.welcome import home_label

if TYPE_CHECKING:
    from tui.startup.opening import Opening


def config_shown(config: Config, home: Path) -> str:
    """The config file read, or where one would be read from first, with `~` for the home."""
    from engine.config import config_candidates

    return home_label(config.source or config_candidates(home)[0])


class TroveApp(TypingApp[int]):
    # Textual loads a screen's CSS_PATH when it is pushed, not for the default screen.
    CSS_PATH = ["app.tcss", "screens/chat.tcss"]
    TITLE = "Trove"
    # The tooltips are what F1 help says of each key (tui.screens.help reads them). The
    # `chat(…)` keys are the chat screen's actions (`action_chat`), declared here for their
    # place: the footer lists the app's keys after the screen's, and F1 help in this order.
    BINDINGS = [
        Binding(
            "escape",
            "chat('cancel')",
            "Cancel",
            tooltip="cancel the running reply or compaction; "
            "twice on an empty prompt: rewind to an earlier prompt",
        ),
        # Esc when there is nothing to cancel (its help is the line above).
        Binding("escape", "chat('escape_idle')", show=False),
        # Priority: over any screen, and before a text box takes Ctrl+C as copy.
        Binding(
            "ctrl+c",
            "chat('interrupt')",
            "Interrupt",
            show=False,
            priority=True,
            tooltip="cancel what runs; else clear the prompt (Up brings it back); "
            "on an empty prompt, twice to quit",
        ),
        Binding(
            "ctrl+o", "chat('toggle_inspector')", "Archive", tooltip="show or hide the archive"
        ),
        Binding("ctrl+t", "chat('threads')", "Threads", tooltip="switch to another thread"),
        Binding("ctrl+y", "chat('copy_reply')", "Copy reply", tooltip="copy the last reply"),
        Binding("f1", "chat('help')", "Help", tooltip="this help"),
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
        self.model_override = model
        self.chat = ChatScreen(
            ChatSettings(
                clock=clock,
                model_label=model_label or (backend.label if backend else config.model.name),
                configured=configured and (backend is None or backend.kind != "none"),
                config_label=config_label or config_shown(config, home),
                config_read=config.source is not None,
                max_width=config.ui.max_width,
                backend=backend,
                show_opened=self.show_opened,
            )
        )
        self._ui_state = load_state(home)  # before the loop runs: the first frame has it
        self.theme = theme_to_use(self._ui_state, config.ui.theme, self.available_themes)
        code_lexers.defer()  # a resumed thread's first frame must not wait for Pygments
        self.unsent_text: str | None = None
        """A prompt the app could not keep in the log at quit: printed after the terminal."""
        self.resume_hint: str | None = None
        """`resume with: trove --thread ID` once the app quits in a thread with history."""

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._keep_theme)
        # Full collections wait for a quiet moment (tui.live.collection).
        collection.keep_full()
        self.set_interval(collection.CHECK, self._collect_when_quiet, name="quiet collection")

    def _collect_when_quiet(self) -> None:
        # Not before the warm-up's end: what its imports make is about to be frozen, and
        # a full collection before that walks all of it (tens of ms, as a prompt is sent).
        if warmed(self.chat):
            collection.collect_when_quiet(time.monotonic() - self.typed_at)

    def _keep_theme(self, theme: Theme) -> None:
        """A theme set after the start (the palette's pick) is kept for the next launch,
        written by a worker thread (a failed write only loses that)."""
        kept = theme_to_use(self._ui_state, self.config.ui.theme, self.available_themes)
        if theme.name == kept:
            return  # already what the next launch would use
        self._ui_state = UiState(theme=theme.name, config_theme=self.config.ui.theme)
        self.run_worker(
            partial(save_state, self.home, self._ui_state),
            thread=True,
            group="ui-state",
            exit_on_error=False,
        )

    def get_default_screen(self) -> Screen[Any]:
        return self.chat

    @property
    def runtime(self) -> Runtime | None:
        """The open thread's runtime (None while none is open)."""
        return self.chat.runtime

    # -- the first thread ------------------------------------------------------------------

    def _threads(self) -> ThreadController:
        """The chat screen's thread controller, made from the config as it is when the
        screen mounts."""
        chat = self.chat
        chat.threads = ThreadController(
            self.config,
            self.home,
            front_end=chat.front_end,
            attach=chat.attach_runtime,
            detach=chat.detach_runtime,
            model=self.model_override,
            backend=self.backend,
        )
        return chat.threads

    def show_opened(self) -> bool:
        """Called by the chat screen as it mounts: show the thread now, in the screen's
        first frame, when that waits on nothing (a new thread; a thread whose open beside
        the start-up is over), instead of drawing an empty transcript first and the
        thread in a second whole frame. False: the screen's `Ready` opens it, waiting."""
        early = self._early
        if early is None:
            if self.start_thread is not None:
                return False
            self._threads().start_new(self.new_thread_id)
            return True
        if early.opened() is None or not early.claim():
            return False
        return self._threads().start_opened(early)

    async def on_chat_screen_ready(self, message: ChatScreen.Ready) -> None:
        early = self._early
        opening = early if early is not None and early.claim() else None
        problem = await self._threads().open_first(
            self.start_thread, self.new_thread_id, opening=opening
        )
        if problem is not None:
            self.call_after_refresh(
                self.chat.notice,
                f"Could not open that thread: {problem}. Nothing was changed; repair or "
                "remove that line of the log to open it. You are in a new thread.",
                "error",
            )

    # -- keys ------------------------------------------------------------------------------

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.chat.key_seen(event.key)
        if isinstance(event, ECHOED) and self.screen_stack:
            screen = self.screen
            if isinstance(screen, EchoingScreen):
                screen.input_arrived()
        await super().on_event(event)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "chat":
            return self.chat.check_action(str(parameters[0]), ())
        return True

    async def action_chat(self, action: str) -> None:
        await self.run_action(action, self.chat)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for name, summary in self.chat.command_list():
            yield SystemCommand(f"/{name}", summary, lambda n=name: self.chat.run_command(f"/{n}"))

    # -- quitting --------------------------------------------------------------------------

    async def action_quit(self) -> None:
        unsent = self.chat.keep_draft()
        if unsent is not None:
            self.unsent_text = unsent
        self._note_resume()
        drawn = self.chat.drawn_replies()
        await self.chat.close()
        if drawn is not None:
            await asyncio.to_thread(drawn_lines.save, *drawn)
        keeping = [w for w in self.workers if w.group == "ui-state"]
        if keeping:  # the theme just picked reaches the disk before the app ends
            await self.workers.wait_for_complete(keeping)
        self.exit(0)

    async def on_unmount(self) -> None:
        collection.let_go_full()
        code_lexers.finish()  # whatever draws code after this app, draws it as Rich does
        self._note_resume()
        await self.chat.close()

    def _note_resume(self) -> None:
        """The way back, printed once the terminal is restored: only for a thread with
        history (one that never got a message is not on disk)."""
        runtime = self.runtime
        if runtime is not None and runtime.thread.has_history:
            thread = runtime.thread
            self.resume_hint = resume_hint(thread.id, home=thread.home, user_id=thread.user_id)
