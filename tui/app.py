"""The Textual app: transcript, status strip, prompt, and the archive inspector.

The app is a view over one engine Runtime. Log events (live or replayed)
become transcript widgets; driver state becomes the status strip and the
footer's live bindings. Every command goes through the engine's registry,
so /help, slash completion and the command palette show one list.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer
from textual.worker import Worker

from engine.backend import Backend
from engine.commands import CommandError, is_command
from engine.config import Config
from engine.driver import DriverClosedError
from engine.events import (
    AssistantMessage,
    CompactEnd,
    CompactStart,
    LogEvent,
    NoteDelete,
    NoteSet,
    ToolResult,
    TurnEnd,
    TurnStart,
    UserMessage,
    to_dict,
)
from engine.log import LogCorruptError
from engine.runtime import Runtime, open_thread
from engine.safe_text import safe_text
from engine.session import Thread, ThreadNotFoundError, fork_thread, list_threads
from tui.messages import OpenBatch, PromptSubmitted, QueueItemEdit, QueueItemRemove
from tui.widgets.prompt_input import PromptInput
from tui.widgets.slash_menu import SlashMenu
from tui.widgets.status_strip import StatusStrip
from tui.widgets.title_bar import TitleBar
from tui.widgets.transcript import Transcript

WARM_AFTER = 1.0
"""Seconds after a thread opens before the model client's import is paid."""

NARROW = 80
"""Below this width the inspector takes the whole screen."""


class TroveApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "Trove"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+o", "toggle_inspector", "Archive"),
        Binding("ctrl+t", "threads", "Threads"),
        Binding("ctrl+y", "copy_reply", "Copy reply"),
        Binding("f1", "help", "Help"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(
        self,
        config: Config,
        home: Path,
        *,
        thread_id: str | None = None,
        model: Any = None,
        model_label: str | None = None,
        configured: bool = True,
        clock: Callable[[], float] = time.monotonic,
        new_thread_id: str | None = None,
        config_label: str | None = None,
        backend: Backend | None = None,
    ) -> None:
        super().__init__()
        self.config = config
        self.home = home
        self.start_thread = thread_id
        self.new_thread_id = new_thread_id
        self.model_override = model
        self.backend = backend
        self.model_label = model_label or (backend.label if backend else config.model.name)
        self.configured = configured and (backend is None or backend.kind != "none")
        self.clock = clock
        self.config_label = config_label or str(config.source or home / "config.yaml")
        self.runtime: Runtime | None = None
        self.commands_running: list[Worker[Any]] = []
        self._inspector_widget: Any = None
        self.theme = config.ui.theme

    # -- layout ------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield TitleBar()
        with Horizontal(id="body"), Vertical(id="chat"):
            yield Transcript(id="transcript")
            yield StatusStrip(self.clock, id="status")
            yield SlashMenu(id="slash")
            yield PromptInput(id="prompt")
        yield Footer()

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

    async def on_mount(self) -> None:
        prompt = self.query_one(PromptInput)
        prompt.menu = self.query_one(SlashMenu)
        prompt.focus()
        try:
            thread = await asyncio.to_thread(
                partial(open_thread, view_if_locked=True),
                self.config,
                self.home,
                self.start_thread,
                self.new_thread_id,
            )
        except (LogCorruptError, ThreadNotFoundError) as exc:
            # The thread stays as it is on disk; work goes on in a new one.
            thread = await asyncio.to_thread(open_thread, self.config, self.home, None)
            self.call_after_refresh(self._cannot_open, str(exc))
        self._attach(self._assemble(thread))

    def _assemble(self, thread: Thread) -> Runtime:
        return Runtime.assemble(
            self.config, self.home, thread, model=self.model_override, backend=self.backend
        )

    def _cannot_open(self, problem: str) -> None:
        self.query_one(Transcript).notice(
            f"Could not open that thread: {problem}. Nothing was changed; repair or remove "
            "that line of the log to open it. You are in a new thread.",
            "error",
        )

    def _attach(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._register_commands(runtime)
        runtime.thread.log.listeners.append(self._on_log_event)
        runtime.thread.log.on_listener_error = self._listener_failed
        runtime.driver.observers.append(self)
        title = self.query_one(TitleBar)
        title.thread = runtime.thread.id
        title.model = self.model_label
        transcript = self.query_one(Transcript)
        transcript.remove_children()
        if not self.configured:
            from tui.widgets.first_run import FirstRunPanel

            transcript.mount(FirstRunPanel(self.config_label))
        transcript.load(runtime.thread.log.events)
        for notice in runtime.notices:
            transcript.notice(notice, "warning")
        if runtime.thread.read_only:
            transcript.notice(
                f"{runtime.thread.read_only}. You can read and search it here; "
                "/new starts a thread you can write in.",
                "warning",
            )
        self._update_context()
        self.on_state()
        inspector = self._inspector()
        if inspector is not None:
            inspector.bind_runtime(runtime)
        # After the first frames, not during them: the import competes for the GIL.
        self.set_timer(
            WARM_AFTER,
            lambda: self.run_worker(self._warm(runtime), group="warm", exit_on_error=False),
        )

    async def _warm(self, runtime: Runtime) -> None:
        """Pay the model client's import before the first prompt, not on it."""
        prepare = getattr(runtime.model, "prepare", None)
        if prepare is not None:
            await prepare()

    def _inspector(self) -> Any:
        return self._inspector_widget

    # -- engine → UI ---------------------------------------------------------------

    def _on_log_event(self, event: LogEvent) -> None:
        self.query_one(Transcript).show_event(event)
        if isinstance(event, CompactStart | CompactEnd | TurnStart | TurnEnd):
            self.on_state()
        if isinstance(event, AssistantMessage | UserMessage | ToolResult | CompactEnd):
            self._update_context()
        if isinstance(event, TurnEnd) and event.status == "error":
            self._restore_failed_prompt(event)
        if isinstance(event, CompactEnd | NoteSet | NoteDelete):
            inspector = self._inspector()
            if inspector is not None:
                inspector.refresh_data()

    def _restore_failed_prompt(self, event: TurnEnd) -> None:
        """A prompt whose turn failed goes back into an empty input, ready to retry."""
        assert self.runtime is not None
        prompt = self.query_one(PromptInput)
        if prompt.text.strip():
            return
        texts = [
            e.text
            for e in self.runtime.thread.log.events
            if isinstance(e, UserMessage) and e.item_id is not None
        ]
        if texts:
            prompt.set_value(texts[-1])

    def on_delta(self, turn: int, text: str) -> None:
        self.query_one(Transcript).delta(text)

    def on_failure(self, text: str) -> None:
        """The engine could not record a failure in the log (the disk): show it here."""
        self.query_one(Transcript).notice(f"✗ {text}", "error")

    def _listener_failed(self, listener: object, event: LogEvent, exc: Exception) -> None:
        """A widget failed on an event: the engine went on; the user hears of it once."""
        self.log.error(f"listener {listener!r} failed on {event.kind}: {exc!r}")
        if self.is_running and self.runtime is not None:
            self.notify(f"Display error ({type(exc).__name__}); the session goes on.")

    def on_state(self) -> None:
        if self.runtime is None:
            return
        driver = self.runtime.driver
        strip = self.query_one(StatusStrip)
        if self.runtime.thread.log.tail.open_compact is not None:
            strip.set_activity("compacting — Esc cancels; you can keep typing", timed=True)
        elif driver.running_turn is not None:
            strip.set_activity(f"replying (turn {driver.running_turn}) — Esc cancels", timed=True)
        else:
            strip.set_activity("")
        strip.set_queue([(item.id, item.text, item.placement) for item in driver.inbox])
        self.refresh_bindings()

    def _update_context(self) -> None:
        if self.runtime is None:
            return
        window = max(1, self.config.model.context_window)
        self.query_one(TitleBar).context_used = self.runtime.driver.surface.tokens / window

    @property
    def busy(self) -> bool:
        if self.runtime is None:
            return False
        running = any(w.is_running for w in self.commands_running)
        return running or self.runtime.driver.running_turn is not None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            # The footer shows "Esc Cancel" only while something runs (or to close the pane).
            inspector = self._inspector()
            return self.busy or bool(inspector is not None and inspector.display)
        return True

    # -- UI → engine ------------------------------------------------------------------

    @on(PromptSubmitted)
    def _submitted(self, message: PromptSubmitted) -> None:
        prompt = self.query_one(PromptInput)
        text = message.text
        if self.runtime is None:
            prompt.give_back(text)
            return
        if is_command(text):
            self.query_one(SlashMenu).hide()
            self.run_command(text)
            return
        if text.lstrip().startswith("//"):
            text = text.lstrip()[1:]
        if not self.configured:
            self.query_one(Transcript).notice(
                "No model is configured, so this prompt was not sent (it is still in the "
                "input). See the panel above.",
                "warning",
            )
            prompt.give_back(text)
            return
        driver = self.runtime.driver
        try:
            if prompt.editing_item is not None:
                if not driver.edit(prompt.editing_item, text):
                    # It started meanwhile: the new text is sent as a prompt of its own.
                    driver.send(text)
                prompt.editing_item = None
                return
            if message.steer and not driver.accepts_next_step:
                self.notify("Nothing to steer right now: sent as a queued follow-up.")
            driver.send(text, placement="next-step" if message.steer else "follow-up")
        except (OSError, DriverClosedError) as exc:
            # Not accepted (a full disk, a read-only view): the text goes back.
            prompt.give_back(text)
            self.query_one(Transcript).notice(
                f"Not sent: {exc}. Your text is back in the input.", "error"
            )

    def run_command(self, text: str) -> None:
        worker = self.run_worker(self._command(text), group="commands", exit_on_error=False)
        self.commands_running.append(worker)
        self.refresh_bindings()

    async def _command(self, text: str) -> None:
        assert self.runtime is not None
        try:
            result = await self.runtime.commands.run(text)
        except asyncio.CancelledError:
            self.query_one(Transcript).notice(
                "Cancelled. The conversation is as it was; nothing you typed was lost.", "warning"
            )
            raise
        finally:
            self.commands_running = [w for w in self.commands_running if w.is_running]
            self.call_later(self.refresh_bindings)
        if result.name in ("help", "quit", "archive", "threads", "new") and result.ok:
            return
        self.query_one(Transcript).notice(result.text, "success" if result.ok else "error")

    @on(QueueItemRemove)
    def _remove_item(self, message: QueueItemRemove) -> None:
        if self.runtime is not None:
            try:
                self.runtime.driver.remove(message.item_id)  # type: ignore[arg-type]
            except OSError as exc:
                self.query_one(Transcript).notice(f"Not removed: {exc}.", "error")

    @on(QueueItemEdit)
    def _edit_item(self, message: QueueItemEdit) -> None:
        if self.runtime is None:
            return
        for item in self.runtime.driver.inbox:
            if item.id == message.item_id:
                prompt = self.query_one(PromptInput)
                prompt.editing_item = item.id
                prompt.set_value(item.text)
                prompt.focus()
                self.notify(f"Editing queued prompt #{item.id}: Enter saves it in place.")

    @on(OpenBatch)
    async def _open_batch(self, message: OpenBatch) -> None:
        await self._show_inspector(True)
        self._inspector().open_batch(message.batch)

    # -- slash completion ---------------------------------------------------------------

    def _command_list(self) -> Iterable[tuple[str, str]]:
        if self.runtime is None:
            return []
        return [(c.name, c.summary) for c in self.runtime.commands]

    @on(PromptInput.Changed)
    def _prompt_changed(self, event: PromptInput.Changed) -> None:
        prompt = self.query_one(PromptInput)
        menu = self.query_one(SlashMenu)
        text = prompt.text
        if text.startswith("/") and " " not in text and "\n" not in text:
            menu.show_for(text[1:].lower(), self._command_list())
        else:
            menu.hide()

    # -- actions ------------------------------------------------------------------

    def action_cancel(self) -> None:
        running = [w for w in self.commands_running if w.is_running]
        if running:
            running[-1].cancel()
            return
        if self.runtime is not None and self.runtime.driver.cancel():
            return
        inspector = self._inspector()
        if inspector is not None and inspector.display:
            self.call_later(self._show_inspector, False)

    async def _show_inspector(self, show: bool) -> None:
        inspector = await self._ensure_inspector() if show else self._inspector()
        if inspector is None:
            return
        inspector.display = show
        self.set_class(show and self.size.width < NARROW, "-inspector-full")
        if show:
            inspector.refresh_data()
            inspector.focus_default()
        else:
            self.query_one(PromptInput).focus()

    async def action_toggle_inspector(self) -> None:
        inspector = self._inspector()
        await self._show_inspector(inspector is None or not inspector.display)

    def on_resize(self) -> None:
        inspector = self._inspector()
        if inspector is not None:
            self.set_class(bool(inspector.display) and self.size.width < NARROW, "-inspector-full")

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        self.push_screen(HelpScreen(self._command_list(), self._help_notes()))

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

    async def switch_thread(self, thread_id: str | None) -> None:
        """Open another thread (or a new one), then close this one; its queue stays in its log."""
        try:
            thread = await asyncio.to_thread(
                partial(open_thread, view_if_locked=True), self.config, self.home, thread_id
            )
        except (LogCorruptError, ThreadNotFoundError, OSError) as exc:
            self._cannot_switch(str(exc))
            return
        if self.runtime is not None:
            old = self.runtime
            self.runtime = None
            self._detach(old)
            await old.aclose()
        self._attach(self._assemble(thread))

    def _cannot_switch(self, problem: str) -> None:
        self.query_one(Transcript).notice(
            f"Could not open that thread: {problem}. Nothing was changed; you are still here.",
            "error",
        )

    def _last_reply(self) -> str | None:
        """The newest reply on screen, streamed or replayed."""
        replies = self.query("AssistantMessage, PastReply")
        return replies.last().text if replies else None  # type: ignore[attr-defined]

    def action_copy_reply(self) -> None:
        text = self._last_reply()
        if text is None:
            self.notify("No reply to copy yet.")
            return
        copy_text(self, text)
        self.notify("Copied the last reply.")

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for name, summary in self._command_list():
            yield SystemCommand(f"/{name}", summary, lambda n=name: self.run_command(f"/{n}"))

    # -- app commands in the engine registry -------------------------------------------

    def _register_commands(self, runtime: Runtime) -> None:
        registry = runtime.commands

        @registry.add("quit", "leave Trove (queued prompts stay in the thread)")
        async def _quit(args: str) -> str:
            self.call_later(self.action_quit)
            return "bye"

        @registry.add("archive", "show or hide the archive inspector")
        async def _archive(args: str) -> str:
            await self.action_toggle_inspector()
            return "inspector toggled"

        @registry.add("new", "start a new thread")
        async def _new(args: str) -> str:
            self.call_later(self.switch_thread, None)
            return "new thread"

        @registry.add("threads", "switch to another thread")
        async def _threads(args: str) -> str:
            self.call_later(self.action_threads)
            return "threads"

        @registry.add("help", "list commands and keys")
        async def _help(args: str) -> str:
            self.call_later(self.action_help)
            return registry.help_text()

        @registry.add("fork", "copy this thread's messages and notes into a new thread")
        async def _fork(args: str) -> str:
            child = await asyncio.to_thread(
                fork_thread, self.home, self.config.user_id, runtime.thread.id
            )
            self.call_later(self.switch_thread, child)
            return (
                f"Forked into thread {child}. The archive stays with the parent, so notes' "
                "citations show as unavailable there until checked again."
            )

        @registry.add("export", "write the thread as Markdown and JSON")
        async def _export(args: str) -> str:
            paths = await asyncio.to_thread(export_thread, runtime)
            return "Exported to " + " and ".join(str(p) for p in paths)

        @registry.add("copy", "copy the last reply (or: /copy code)", takes_args=True)
        async def _copy(args: str) -> str:
            text = self._last_reply()
            if text is None:
                raise CommandError("No reply to copy yet.")
            if args == "code":
                blocks = text.split("```")[1::2]
                if not blocks:
                    raise CommandError("The last reply has no code block.")
                text = blocks[-1].split("\n", 1)[-1] if "\n" in blocks[-1] else blocks[-1]
            elif args:
                raise CommandError("/copy takes no argument or 'code'")
            copy_text(self, text)
            return f"Copied {len(text)} characters."

    async def on_unmount(self) -> None:
        if self.runtime is not None:
            runtime, self.runtime = self.runtime, None
            self._detach(runtime)
            await runtime.aclose()

    def _detach(self, runtime: Runtime) -> None:
        """The closing runtime's late events must not reach widgets being torn down."""
        if self._on_log_event in runtime.thread.log.listeners:
            runtime.thread.log.listeners.remove(self._on_log_event)
        if self in runtime.driver.observers:
            runtime.driver.observers.remove(self)

    async def action_quit(self) -> None:
        if self.runtime is not None:
            runtime, self.runtime = self.runtime, None
            self._detach(runtime)
            await runtime.aclose()
        self.exit(0)


def export_thread(runtime: Runtime) -> list[Path]:
    """Markdown for people, JSON (the raw events) for programs."""
    from engine.private import private_dir, write_private

    directory = private_dir(runtime.home / "exports", base=runtime.home)
    base = directory / runtime.thread.id
    events = list(runtime.thread.log.events)
    lines = [f"# Trove thread {runtime.thread.id}", ""]
    for event in events:
        if isinstance(event, UserMessage):
            label = "Checkpoint" if event.checkpoint is not None else "User"
            lines += [f"## {label}", "", event.text, ""]
        elif isinstance(event, AssistantMessage):
            lines += ["## Assistant", "", event.content or "", ""]
            for call in event.calls:
                lines += [f"- tool `{call.name}`: `{call.arguments}`"]
        elif isinstance(event, ToolResult):
            lines += ["```", event.content, "```", ""]
    markdown = base.with_suffix(".md")
    write_private(markdown, "\n".join(lines).encode())
    raw = base.with_suffix(".json")
    data = {"thread": runtime.thread.id, "events": [to_dict(event) for event in events]}
    write_private(raw, json.dumps(data, ensure_ascii=False, indent=1).encode())
    return [markdown, raw]


def copy_text(app: App[Any], text: str) -> None:
    """OSC 52 (works over SSH) plus the system clipboard when a tool for it exists.

    The text is made terminal-safe first: it is pasted into terminals, where an
    escape in it (a bracketed-paste end, say) would run as if typed.
    """
    text = safe_text(text)
    app.copy_to_clipboard(text)
    import shutil
    import subprocess

    for command in (["wl-copy"], ["xclip", "-selection", "clipboard"], ["pbcopy"]):
        if shutil.which(command[0]):
            try:
                subprocess.run(command, input=text.encode(), timeout=2, check=False)
            except (OSError, subprocess.SubprocessError):
                continue
            break
