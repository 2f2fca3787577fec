"""Assembles one open thread: config, log, model client, tools and driver.

Every front end (the Textual app, the plain REPL, one-shot mode, tests)
builds the same Runtime, so they cannot drift apart in behaviour.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from engine.backend import Backend, choose_backend
from engine.builtin_commands import register_builtins
from engine.commands import CommandRegistry, FrontEnd
from engine.compaction import CompactService
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
from engine.port import (
    DriverRelay,
    EngineState,
    ErrorHook,
    Listener,
    Port,
    Unsubscribe,
    engine_state,
)
from engine.session import Thread
from engine.surface import Surface
from engine.thread_lock import ThreadLockedError
from engine.tools import ToolBox

SYSTEM_PROMPT = (
    "You are a helpful assistant in Trove, a terminal chat app. "
    "Answer clearly and concisely; use Markdown where it helps."
)

INTERRUPTED_COMPACTION = (
    "The compaction that was running when Trove last quit was interrupted; nothing was lost: "
    "the conversation is as it was. Run /compact again if you want it."
)


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
        return Thread.pending(home, config.user_id, new_id)
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
    # The control events hold every event the scan reads (engine.log.control).
    if not scan_history(thread.log.control, scope).lost:
        return
    with ArchiveStore(archive_path(thread.dir), config.task_continuity, scope=scope) as store:
        recapture(thread.log, store, user_id=thread.user_id, thread_id=thread.id)


def _continuity(config: Config, thread: Thread, surface: Surface) -> ContinuityContext:
    """The thread's archive (capture on every compaction) and notes."""
    scope = scope_binding(thread.user_id, thread.id)  # written into the file at creation
    store = ArchiveStore(
        archive_path(thread.dir),
        config.task_continuity,
        scope=scope,
        readonly=thread.read_only is not None,  # a view of a thread another process writes
    )
    return ContinuityContext.for_log(
        thread.log, surface, store, user_id=thread.user_id, thread_id=thread.id
    )


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
    port: Port
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
        front_end: FrontEnd | None = None,
    ) -> Runtime:
        """Open (or resume) a thread; must run inside the event loop."""
        return cls.assemble(
            config,
            home,
            open_thread(config, home, thread_id),
            model=model,
            backend=backend,
            front_end=front_end,
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
        front_end: FrontEnd | None = None,
    ) -> Runtime:
        """Build the runtime around an opened thread (cheap: no file I/O).

        Every part gets what it needs through its constructor. With task
        continuity on, every compaction is captured into the archive; with
        tools on, the model also gets the three history tools and its notes.
        With tools off (a model without native tool calls) capture and the
        inspector still work; only the three tools are not offered.
        """
        if model is not None:
            client = model
        else:
            backend = backend or choose_backend(config, os.environ)
            client = backend.make_client()
        if tools is None and backend is not None:
            tools = backend.tools_enabled
        offer_tools = tools if tools is not None else config.model.tools != "off"
        window = backend.context_window if backend is not None else config.model.context_window
        # A tiny local model answers far better under the default system prompt
        # its own chat template supplies when the request carries none.
        local = backend is not None and backend.kind == "local"
        system_prompt = "" if local else SYSTEM_PROMPT
        surface = Surface.from_events(thread.log.events)
        continuity = None
        capture = None
        toolbox = ToolBox()
        context = None
        if config.task_continuity.enabled:
            continuity = _continuity(config, thread, surface)
            capture = capture_hook(continuity)
            if offer_tools:
                toolbox = ToolBox(build_tools(continuity))
                system_prompt = "\n\n".join(p for p in (system_prompt, AUTHORITY_CONTRACT) if p)
                context = context_builder(continuity)
        compaction = CompactService(
            client, config.compaction, context_window=window, capture=capture
        )
        port = Port()
        relay = DriverRelay(port, lambda: engine_state(driver, thread.log))
        client.on_retry = relay.on_retry
        client.on_status = relay.on_model_status
        driver = Driver(
            thread.log,
            client,
            tools=toolbox,
            system_prompt=system_prompt,
            hooks=compaction,
            context=context,
            max_tool_rounds=config.model.max_tool_rounds,
            surface=surface,
            observers=[relay],
        )
        thread.log.subscribe(relay.on_event)
        notices = [thread.log.torn_report] if thread.log.torn_report else []
        if thread.log.tail.quit_compact is not None:
            notices.append(INTERRUPTED_COMPACTION)
        runtime = cls(
            config,
            home,
            thread,
            client,
            driver,
            CommandRegistry(thread.log),
            compaction,
            continuity,
            port,
            notices=notices,
            backend=backend,
        )
        register_builtins(runtime, front_end)
        return runtime

    def subscribe(self, listener: Listener, *, on_error: ErrorHook | None = None) -> Unsubscribe:
        """Follow this thread: log events, reply deltas, state changes and failures.

        A listener that raises is reported (to `on_error`, else the logger) and
        never reaches the engine. The returned callable stops it (idempotent).
        """
        return self.port.subscribe(listener, on_error=on_error)

    def state(self) -> EngineState:
        """What runs and what waits now (a copy)."""
        return engine_state(self.driver, self.thread.log)

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
