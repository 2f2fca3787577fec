"""The open thread as the chat screen draws it: transcript, status strip and title bar.

The screen hands down what the engine says (through tui.bridge); this draws
it: the thread's log as it opens and as it grows, the reply as it streams,
the running turn or compaction and the queue in the status strip, how full
the context window is in the title bar. The prompt's drafts and the archive
inspector follow the log too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from textual.screen import Screen

from engine import events as ev
from engine.model.backend import Backend
from engine.port import EngineState
from engine.runtime import Runtime
from tui.live import collection
from tui.screens.chat_settings import ChatSettings
from tui.screens.inspector_pane import InspectorPane
from tui.screens.prompt_drafts import PromptDrafts
from tui.widgets.prompt_input import PromptInput
from tui.widgets.status_strip import QueueList, StatusStrip
from tui.widgets.title_bar import TitleBar
from tui.widgets.transcript import Transcript
from tui.widgets.welcome import TinyModelNote, Welcome, is_empty, tiny_offline

if TYPE_CHECKING:
    from pathlib import Path

    from tui.drawn_lines import DrawnReply, Kept


def thread_title(events: Sequence[ev.LogEvent]) -> str:
    """The title `/rename` gave the thread last ("" when none): the title bar shows it in
    place of the thread's id. Read from the end: a rename is rare, and recent."""
    for event in reversed(events):
        if isinstance(event, ev.SessionTitle):
            return " ".join(event.title.split())
    return ""


class ThreadView:
    def __init__(
        self,
        screen: Screen[Any],
        settings: ChatSettings,
        drafts: PromptDrafts,
        inspector: InspectorPane,
        changed: Callable[[], None],
    ) -> None:
        self._screen = screen
        self._settings = settings
        self._drafts = drafts
        self._inspector = inspector
        self._changed = changed
        """Called with every new state (the keys on offer may change)."""
        self._waiting = ""
        """What the running request waits on ("retrying (2/3)…", "starting the offline
        model…"); cleared when it is over or text flows."""
        self._queued = False
        self._turn_hold = False
        """A turn runs: full collections are held off until it ends (tui.live.collection)."""

    def _hold(self, running: bool) -> None:
        """Hold full collections from a turn's start (its request, then its reply) to its
        end, or until another thread is shown."""
        if running and not self._turn_hold:
            self._turn_hold = True
            collection.hold_full()
        elif not running and self._turn_hold:
            self._turn_hold = False
            collection.release_full()

    def release_hold(self) -> None:
        """No turn will end here any more (its runtime detached, the screen gone): a turn's
        hold ends with it, or the process keeps full collections held."""
        self._hold(False)

    def show(self, runtime: Runtime, kept: Kept | None = None) -> None:
        """The thread's log so far (replies in `kept` drawn from the lines its last session
        kept: tui.drawn_lines), with what the user should know first; its unsent prompt
        back in the input; its state."""
        settings = self._settings
        title = self._screen.query_one(TitleBar)
        title.thread = runtime.thread.log.facts.title or runtime.thread.id
        title.model = self.model_label(runtime)
        self._hold(False)
        transcript = self._screen.query_one(Transcript)
        transcript.remove_children()
        if not settings.configured:
            from tui.widgets.first_run import FirstRunPanel

            transcript.mount(FirstRunPanel(settings.config_label))
        elif is_empty(runtime.thread.log.events):
            transcript.mount(
                Welcome(
                    self.model_label(runtime),
                    runtime.thread.dir,
                    settings.config_label,
                    settings.config_read,
                )
            )
            backend = settings.backend
            if backend is not None and tiny_offline(backend):
                transcript.mount(TinyModelNote(backend, settings.config_label))
        transcript.load(runtime.thread.log.events, kept)
        for notice in runtime.notices:
            transcript.notice(notice, "warning")
        if runtime.thread.read_only:
            transcript.notice(
                f"{runtime.thread.read_only}. You can read and search it here; "
                "/new starts a thread you can write in.",
                "warning",
            )
        self._drafts.restore(runtime)
        self.context(runtime)
        self.state(runtime.state())
        self._inspector.bind(runtime)

    def model_label(self, runtime: Runtime) -> str:
        """The model as the header names it: the runtime's (/model may have switched it)."""
        backend = runtime.backend
        return backend.label if backend is not None else self._settings.model_label

    def model_changed(self, runtime: Runtime, backend: Backend) -> None:
        """/model switched the model: its name and its context window's figure."""
        self._screen.query_one(TitleBar).model = backend.label
        self.context(runtime)

    def event(self, runtime: Runtime, event: ev.LogEvent) -> None:
        """An event the log just took."""
        if isinstance(event, ev.SessionRewind):
            self._rewound(runtime, event)
            return
        if isinstance(event, ev.SessionTitle):
            self._screen.query_one(TitleBar).thread = thread_title([event]) or runtime.thread.id
        self._screen.query_one(Transcript).show_event(event)
        if isinstance(event, ev.AssistantMessage | ev.UserMessage | ev.ToolResult | ev.CompactEnd):
            self.context(runtime)
        if isinstance(event, ev.TurnStart | ev.TurnEnd):
            self._hold(isinstance(event, ev.TurnStart))
        if isinstance(event, ev.TurnEnd) and event.withdrawn:
            self._drafts.restore_withdrawn(runtime, event)
        if isinstance(event, ev.CompactEnd | ev.NoteSet | ev.NoteDelete):
            self._inspector.refresh_data()

    def streamed(self, runtime: Runtime, text: str) -> None:
        """Reply text that arrived since the last (text flowing ends any wait)."""
        if self._waiting:
            self._waiting = ""
            self.state(runtime.state(), restart=False)
        self._screen.query_one(Transcript).delta(text)

    def thought(self, runtime: Runtime, text: str) -> None:
        """Thinking that arrived since the last (a reasoning model's; it ends any wait)."""
        if self._waiting:
            self._waiting = ""
            self.state(runtime.state(), restart=False)
        self._screen.query_one(Transcript).reasoning(text)

    def waiting_on(self, runtime: Runtime, text: str) -> None:
        """What the running request waits on now (a retry, the offline model's start)."""
        self._waiting = text
        self.state(runtime.state(), restart=False)

    def last_reply(self) -> str | None:
        """The newest reply on screen, streamed or replayed."""
        replies = self._screen.query("AssistantMessage, PastReply")
        return replies.last().text if replies else None  # type: ignore[attr-defined]

    def drawn(self, runtime: Runtime) -> tuple[Path, list[DrawnReply]] | None:
        """The newest replies' lines as drawn, for the next open's first screen
        (tui.drawn_lines); not for a read-only view, whose thread another Trove writes."""
        if runtime.thread.read_only or not runtime.thread.log.exists:
            return None
        return runtime.thread.dir, self._screen.query_one(Transcript).to_keep()

    def _rewound(self, runtime: Runtime, event: ev.SessionRewind) -> None:
        """After a rewind (a /retry's, or its undoing, too): the transcript and the
        inspector show the thread's new line."""
        transcript = self._screen.query_one(Transcript)
        transcript.remove_children()
        transcript.load(runtime.thread.log.events)
        if event.retry:
            said = "Answering your last prompt again; the earlier reply is kept as a branch."
        elif event.undoes is not None:
            said = (
                "The retry did not finish, so the earlier reply is back (what the retry "
                "wrote is kept as a branch)."
            )
        else:
            said = (
                "Rewound: the conversation goes on from here. What came after is kept "
                "as a branch (/rewind lists it)."
            )
        transcript.notice(said, "")
        self.context(runtime)
        self._inspector.refresh_data()

    def context(self, runtime: Runtime) -> None:
        # The window pressure compaction measures against (for the offline model, the
        # size its server runs with less the reply cap): one figure for both.
        window = max(1, runtime.compaction.context_window)
        self._screen.query_one(TitleBar).context_used = runtime.driver.surface.tokens / window

    def state(self, state: EngineState, *, restart: bool = True) -> None:
        """`restart=False` keeps the activity's timer: the same work, told differently."""
        screen = self._screen
        strip = screen.query_one(StatusStrip)
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
        if not queued and isinstance(screen.focused, QueueList):
            # The queue went away under the focus: typing goes on in the prompt.
            screen.set_focus(screen.query_one(PromptInput), scroll_visible=False)
        if queued != self._queued:
            self._queued = queued
            screen.refresh_bindings()  # the footer offers "Tab Queue" only while prompts wait
        self._changed()
