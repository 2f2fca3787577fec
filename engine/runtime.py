"""Assembles one open thread: config, log, model client, tools and driver.

Every front end (the Textual app, the plain REPL, one-shot mode, tests)
builds the same Runtime, so they cannot drift apart in behaviour.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from engine.backend import Backend, choose_backend
from engine.commands import CommandError, CommandRegistry
from engine.compaction import CompactionCancelled, CompactionError, CompactService
from engine.config import Config
from engine.continuity import (
    AUTHORITY_CONTRACT,
    ArchiveStore,
    ContinuityContext,
    archive_path,
    build_tools,
    context_builder,
    scope_binding,
)
from engine.continuity.capture import capture_hook
from engine.driver import Driver
from engine.model import ModelClient
from engine.session import Thread
from engine.thread_lock import ThreadLockedError
from engine.tools import ToolBox

SYSTEM_PROMPT = (
    "You are a helpful assistant in Trove, a terminal chat app. "
    "Answer clearly and concisely; use Markdown where it helps."
)


def make_model(config: Config) -> ModelClient:
    """The client for the backend the config and environment select."""
    return choose_backend(config, os.environ).make_client()


def open_thread(
    config: Config,
    home: Path,
    thread_id: str | None = None,
    new_id: str | None = None,
    *,
    view_if_locked: bool = False,
) -> Thread:
    """The blocking part of opening a thread (replay, recovery), safe in a worker thread.

    A thread another process writes raises ThreadLockedError, or with
    `view_if_locked` opens as a read-only view that says why.
    """
    if thread_id is None:
        return Thread.create(home, config.user_id, new_id)
    try:
        thread = Thread.resume(home, config.user_id, thread_id)
    except ThreadLockedError as exc:
        if not view_if_locked:
            raise
        return Thread.view(home, config.user_id, thread_id, f"read-only view: {exc}")
    if config.task_continuity.enabled:
        _recover_archive(config, thread)
    return thread


def _recover_archive(config: Config, thread: Thread) -> None:
    """A crash may have cut a compaction between its checkpoint and its archive write,
    or a capture may have failed: the originals are still in the log."""
    from engine.continuity.recovery import recapture
    from engine.continuity.status import scan_history, scope_binding

    scope = scope_binding(thread.user_id, thread.id)
    if not scan_history(thread.log.events, scope).lost:
        return
    with ArchiveStore(archive_path(thread.dir), config.task_continuity, scope=scope) as store:
        recapture(thread.log, store, user_id=thread.user_id, thread_id=thread.id)


def _attach_continuity(
    config: Config,
    thread: Thread,
    driver: Driver,
    compaction: CompactService,
    *,
    tools: bool | None,
) -> ContinuityContext:
    """Archive capture on every compaction; notes and history tools for the model.

    With tools off (a model without native tool calls) capture and the
    inspector still work; only the three tools are not offered.
    """
    scope = scope_binding(thread.user_id, thread.id)  # written into the file at creation
    store = ArchiveStore(
        archive_path(thread.dir),
        config.task_continuity,
        scope=scope,
        readonly=thread.read_only is not None,  # a view of a thread another process writes
    )
    context = ContinuityContext.for_log(
        thread.log, driver.surface, store, user_id=thread.user_id, thread_id=thread.id
    )
    compaction.capture = capture_hook(context)
    offer_tools = tools if tools is not None else config.model.tools != "off"
    if offer_tools:
        for tool in build_tools(context):
            driver.tools.add(tool)
        driver.system_prompt = "\n\n".join(
            p for p in (driver.system_prompt, AUTHORITY_CONTRACT) if p
        )
        driver.context = context_builder(context)
    return context


@dataclass
class Runtime:
    config: Config
    home: Path
    thread: Thread
    model: ModelClient
    driver: Driver
    commands: CommandRegistry
    compaction: CompactService
    continuity: ContinuityContext | None
    notices: list[str] = field(default_factory=list)
    backend: Backend | None = None

    @classmethod
    def open(
        cls,
        config: Config,
        home: Path,
        *,
        thread_id: str | None = None,
        model: ModelClient | None = None,
        backend: Backend | None = None,
    ) -> Runtime:
        """Open (or resume) a thread; must run inside the event loop."""
        return cls.assemble(
            config, home, open_thread(config, home, thread_id), model=model, backend=backend
        )

    @classmethod
    def assemble(
        cls,
        config: Config,
        home: Path,
        thread: Thread,
        *,
        model: ModelClient | None = None,
        tools: bool | None = None,
        backend: Backend | None = None,
    ) -> Runtime:
        """Build the runtime around an opened thread (cheap: no file I/O)."""
        if backend is None and model is None:
            backend = choose_backend(config, os.environ)
        client = model or backend.make_client()
        if tools is None and backend is not None:
            tools = backend.tools_enabled
        window = backend.context_window if backend is not None else config.model.context_window
        compaction = CompactService(client, config.compaction, context_window=window)
        # A tiny local model answers far better under the default system prompt
        # its own chat template supplies when the request carries none.
        local = backend is not None and backend.kind == "local"
        driver = Driver(
            thread.log,
            client,
            tools=ToolBox(),
            system_prompt="" if local else SYSTEM_PROMPT,
            hooks=compaction,
            max_tool_rounds=config.model.max_tool_rounds,
        )
        continuity = None
        if config.task_continuity.enabled:
            continuity = _attach_continuity(config, thread, driver, compaction, tools=tools)
        commands = CommandRegistry(thread.log)
        runtime = cls(
            config, home, thread, client, driver, commands, compaction, continuity, backend=backend
        )
        runtime._register_commands()
        if thread.log.torn_report:
            runtime.notices.append(thread.log.torn_report)
        return runtime

    def _register_commands(self) -> None:
        @self.commands.add("help", "list commands and what they do")
        async def _help(args: str) -> str:
            text = self.commands.help_text()
            if self.backend is not None and not self.backend.tools_enabled:
                text += (
                    "\nModel tools (task_note, history_search, history_read) are off for this"
                    " model (set model.tools: on to offer them); /compact, history search"
                    " and the inspector still work."
                )
            return text

        @self.commands.add("compact", "summarize older messages now; the originals stay searchable")
        async def _compact(args: str) -> str:
            try:
                outcome = await self.compaction.compact_now(self.driver)
            except CompactionError as exc:
                raise CommandError(str(exc)) from exc
            except CompactionCancelled as late:
                # The cancel came after the checkpoint was written: say what is true.
                return late.outcome.describe() + " (The cancel came too late to stop it.)"
            if outcome is None:
                return "Nothing to compact yet: the conversation is too short."
            return outcome.describe()

    async def aclose(self) -> None:
        """Unwind first (commands such as /compact, then the turn), so every bracket
        they opened is closed in the log; only then close the model and the log.
        Queued prompts stay queued (in the log) for the next time."""
        self.driver.close_admission()
        await self.commands.aclose()
        await self.driver.aclose()
        await self.model.aclose()
        if self.continuity is not None and self.continuity.store is not None:
            self.continuity.store.close()
        try:
            self.thread.log.flush()
        except OSError as exc:
            self.notices.append(f"could not fsync {self.thread.log.path}: {exc}")
        self.thread.close()
