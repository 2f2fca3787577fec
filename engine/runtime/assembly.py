"""Assembles one open thread: config, log, model client, tools and driver.

Every front end (the Textual app, the plain REPL, one-shot mode, tests)
builds the same Runtime, so they cannot drift apart in behaviour. Over 400 lines:
the open, the notices an open owes the user, and the close are one lifecycle.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import UNSET, Struct, field

from engine.compaction import CompactService
from engine.config import Config
from engine.driver import Driver
from engine.errors import TroveError
from engine.events import CompactArchived, CompactEnd, CompactStart, LogEvent, UserMessage
from engine.log import SessionLog
from engine.model import ClientFactory, ModelClient
from engine.model.backend import Backend, choose_backend
from engine.port import EngineState, ErrorHook, Listener, Port, Unsubscribe
from engine.runtime.builtin import register_builtins
from engine.runtime.commands import CommandRegistry, FrontEnd
from engine.runtime.continuity import ThreadContinuity
from engine.runtime.mcp_tools import TROVE_TOOLS, ToolsExtension, register_tools_command
from engine.runtime.relay import DriverRelay, engine_state
from engine.runtime.system_prompt import SYSTEM_PROMPT, SystemPrompt
from engine.surface import Surface
from engine.surface.kept import for_log, kept_parts
from engine.threads.lock import ThreadLockedError
from engine.threads.thread import Thread
from engine.util.offload import run_drained

if TYPE_CHECKING:
    from engine.continuity import ContinuityContext
    from engine.mcp import McpHub

INTERRUPTED_COMPACTION = (
    "The compaction that was running when Trove last quit was interrupted; nothing was lost: "
    "the conversation is as it was. Run /compact again if you want it."
)
"""The notice for a compaction cut off before its checkpoint: the conversation is as it was."""

COMPACTED_BEFORE_QUIT = (
    "The compaction that was running when Trove last quit had already replaced {what} "
    "with its summary: the conversation is compacted."
)
"""The notice for one cut off after its checkpoint (while archiving the originals); one of
the archive sentences below follows it."""


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
    _refresh_index(thread)
    return thread


REFRESH_AFTER = 10_000
"""Events read after the resume index at an open that make it worth writing again then."""


def _refresh_index(thread: Thread) -> None:
    """An open that read many lines after its resume index (a crash after a long session)
    writes it again at once, so a crash of this session too does not make the next open
    read them again."""
    log = thread.log
    if log.kept is None or len(log.file_events) - log.kept_events < REFRESH_AFTER:
        return
    log.refresh_index(*kept_parts(for_log(log), len(log.file_events)))


def _recover_archive(config: Config, thread: Thread) -> None:
    """A crash may have cut a compaction between its checkpoint and its archive write,
    or a capture may have failed: the originals are still in the log."""
    records = thread.log.state.records  # every event the scan reads (engine.log.state)
    if not any(map(_archive_reference, records)):
        return  # never compacted: nothing to recover, and no continuity import to pay
    from engine.continuity import ArchiveStore, archive_path
    from engine.continuity.archive.status import scan_history, scope_binding
    from engine.continuity.recovery import recapture

    scope = scope_binding(thread.user_id, thread.id)
    if not scan_history(records, scope).lost:
        return
    with ArchiveStore(archive_path(thread.dir), config.task_continuity, scope=scope) as store:
        recapture(thread.log, store, user_id=thread.user_id, thread_id=thread.id)


def _archive_reference(event: LogEvent) -> bool:
    """An event `scan_history` reads: without one, no archive can have been promised."""
    kind = type(event)
    if kind is UserMessage:
        return event.checkpoint is not None  # type: ignore[union-attr]
    return kind is CompactEnd or kind is CompactArchived


def interrupted_compaction_notice(log: SessionLog, *, continuity: bool) -> str | None:
    """What to tell the user about a compaction the end of the last lifecycle cut off
    (a kill, or a quit; `TailState.quit_compact`), None when there is none.

    Cut off before its checkpoint, it changed nothing but the log. Cut off after it
    (the archive write is the last step), the summary has replaced the span: the
    conversation is compacted, and the notice says where the originals are: archived
    before the end, archived again when this open recaptured them from the log
    (`_recover_archive`), or not archived (history `unavailable`), or, with task
    continuity off, never meant to be. Reads the log's records only (every checkpoint,
    end and archive record is one: engine.log.state), and only when there is such a
    compaction.
    """
    cut = log.tail.quit_compact
    if cut is None:
        return None
    start = cut.seq if isinstance(cut, CompactStart) else cut.start
    replaced: int | None = None
    archive: Any = None
    recovered = False
    for event in log.state.records:
        if isinstance(event, UserMessage):
            mark = event.checkpoint
            if start is not None and mark is not None and mark.start == start:
                replaced = mark.count or 0
        elif isinstance(event, CompactEnd | CompactArchived) and event.start == start:
            if isinstance(event, CompactEnd) and event.archive_error:
                archive = {"error": event.archive_error}
            elif event.archive is not UNSET:
                archive = event.archive
                seam = log.tail.end_seed
                recovered = isinstance(event, CompactArchived) and bool(
                    seam and event.seq > seam.seq
                )
    if replaced is None:
        return INTERRUPTED_COMPACTION
    what = f"{replaced} messages" if replaced else "the messages it selected"
    head = COMPACTED_BEFORE_QUIT.format(what=what)
    return f"{head} {_originals(archive, recovered=recovered, continuity=continuity)}"


def _originals(archive: Any, *, recovered: bool, continuity: bool) -> str:
    """Where the originals of a compacted span are, as one sentence for the notice."""
    batch = archive.get("batch") if isinstance(archive, Mapping) else None
    if isinstance(batch, int) and not isinstance(batch, bool):
        how = ", recovered from the log as this thread opened" if recovered else ""
        return f"Its originals are archived (batch {batch}{how}): history search can read them."
    if isinstance(archive, Mapping):
        why = archive.get("error") or "the archive write failed"
        return (
            f"Its originals could not be archived ({why}): history is unavailable until "
            "they are; they are still in the log, and the next open tries again."
        )
    if not continuity:
        return "Task continuity is off, so its originals were not archived; the log keeps them."
    return (
        "Its originals are not archived yet: history is unavailable until the next open "
        "archives them again from the log."
    )


class Runtime(Struct):
    config: Config
    home: Path
    thread: Thread
    model: ModelClient
    driver: Driver
    commands: CommandRegistry
    compaction: CompactService
    _continuity: ThreadContinuity | None
    """Task continuity (None: off), which the driver and the compaction were given."""
    port: Port
    system: SystemPrompt
    """The thread's system prompt (/system), which the driver sends."""
    notices: list[str] = field(default_factory=list)
    backend: Backend | None = None
    deleting: bool = False
    """/delete of this thread: its directory is removed once it is closed (`aclose`)."""
    closing_notice: str | None = None
    """What closing it did beyond closing (a /delete: done, or why not), for the front end."""
    closing_failed: bool = False
    relay: DriverRelay | None = None
    """What tells the front ends of the model client's retries and waits."""
    front_end: FrontEnd | None = None
    """The front end's hook for the commands that switch threads or quit."""
    mcp: McpHub | None = None
    """The MCP servers (None: none configured); they start with the first request."""

    def __post_init__(self) -> None:
        if self.mcp is not None:
            # The front end asks before a tool not in `allow` runs (None: such tools are denied).
            self.mcp.consent = getattr(self.front_end, "ask_consent", None)
        register_tools_command(self.commands, self.mcp)
        register_builtins(self, self.front_end)  # the command list is whole once built

    def use_model(self, backend: Backend) -> ModelClient:
        """Talk to `backend`'s model from the next request on (/model), its context window
        the compaction's; returns the old client, for the caller to close. Only between
        turns: the caller refuses while a turn or a compaction runs."""
        old, client = self.model, backend.make_client(self.relay)
        self.model = self.driver.model = self.compaction.model = client
        self.driver.model_entry = backend.entry
        self.system.use_default("" if backend.kind == "local" else SYSTEM_PROMPT)
        self.compaction.context_window = backend.context_window
        if self._continuity is not None:
            self._continuity.offer_tools(backend.tools_enabled)
        if isinstance(self.driver.extension, ToolsExtension):
            self.driver.extension.offer = backend.tools_enabled
        self.backend = backend
        return old

    def delete_on_close(self) -> None:
        """Remove this thread's directory, log and archive, once `aclose` has closed it."""
        self.deleting = True

    @property
    def continuity(self) -> ContinuityContext | None:
        """The archive and notes (None: task continuity is off); builds them first if a
        deferred assembly has not yet, so whoever reads them sees the thread for good."""
        return self._continuity.context() if self._continuity is not None else None

    def complete(self) -> None:
        """Build what `assemble(defer_continuity=True)` left for later: the archive, the
        history tools, the notes and the authority contract. Idempotent; done by the
        front end after its first frame, and in any case by the first request or
        compaction (whichever comes first)."""
        if self._continuity is not None:
            self._continuity.complete()

    @classmethod
    def open(
        cls,
        config: Config,
        home: Path,
        *,
        thread_id: str | None = None,
        model: ModelClient | ClientFactory | None = None,
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
        model: ModelClient | ClientFactory | None = None,
        tools: bool | None = None,
        backend: Backend | None = None,
        front_end: FrontEnd | None = None,
        defer_continuity: bool = False,
        surface: Surface | None = None,
    ) -> Runtime:
        """Build the runtime around an opened thread (cheap: no file I/O).

        Each part is built once, with everything it needs given to its
        constructor. `model` is a client as built (its observer is its own) or a
        factory given the runtime's observer; by default the backend makes it.
        With task continuity on, every compaction is captured into the archive;
        with tools on, the model also gets the three history tools and its notes.
        With tools off (a model without native tool calls) capture and the
        inspector still work; only the three tools are not offered.

        With `defer_continuity` the continuity package (its import is a good
        part of a launch) is built by `complete()`, or by the first request or
        capture that needs it: a front end's first frame needs none of it.

        `surface`, if given, is `engine.surface.kept.for_log(thread.log)` built
        off the loop by whoever opened the thread, with nothing appended since.
        """
        if model is None:
            backend = backend or choose_backend(config, os.environ)
            model = backend.make_client
        if tools is None and backend is not None:
            tools = backend.tools_enabled
        offer_tools = tools if tools is not None else config.model.tools != "off"
        window = backend.context_window if backend is not None else config.model.context_window
        # A tiny local model answers far better under the default system prompt
        # its own chat template supplies when the request carries none.
        local = backend is not None and backend.kind == "local"
        if surface is None:
            surface = for_log(thread.log)
        port = Port()
        relay = DriverRelay(port, lambda: engine_state(driver, thread.log))
        client = model if isinstance(model, ModelClient) else model(relay)
        continuity = (
            ThreadContinuity(config, thread, surface, tools=offer_tools)
            if config.task_continuity.enabled
            else None
        )
        compaction = CompactService(
            client,
            config.compaction,
            context_window=window,
            capture=continuity.capture if continuity is not None else None,
        )
        hub: McpHub | None = None
        extension: ThreadContinuity | ToolsExtension | None = continuity
        if config.mcp.servers:  # the hub (and later the SDK) only when servers are configured
            from engine.mcp import McpHub

            hub = McpHub(config.mcp, reserved=TROVE_TOOLS)
            extension = ToolsExtension(continuity, hub, offer=offer_tools)
        driver = Driver(
            thread.log,
            client,
            hooks=compaction,
            extension=extension,
            max_tool_rounds=config.model.max_tool_rounds,
            surface=surface,
            observers=[relay],
            model_entry=backend.entry if backend is not None else None,
        )
        thread.log.subscribe(relay.on_event)
        if continuity is not None and not defer_continuity:
            continuity.complete()
        reports = (thread.log.damage_report, thread.log.torn_report)
        notices = [report for report in reports if report]
        interrupted = interrupted_compaction_notice(
            thread.log, continuity=config.task_continuity.enabled
        )
        if interrupted is not None:
            notices.append(interrupted)
        return cls(
            config,
            home,
            thread,
            client,
            driver,
            CommandRegistry(thread.log),
            compaction,
            continuity,
            port,
            SystemPrompt(thread.log, driver, "" if local else SYSTEM_PROMPT),
            notices=notices,
            backend=backend,
            relay=relay,
            front_end=front_end,
            mcp=hub,
        )

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
        if self.mcp is not None:
            await self.mcp.aclose()
        await self.model.aclose()
        if self._continuity is not None:
            self._continuity.close()
        try:
            self.thread.log.flush()
        except OSError as exc:
            self.notices.append(f"could not fsync {self.thread.log.path}: {exc}")
        try:
            # The next open starts from the log's end (engine.log.resume), the surface
            # with it; a log read whole this time also keeps a replay snapshot
            # (engine.log.snapshot), for an open without the index.
            if not self.deleting:
                await run_drained(self._keep)
        finally:
            self.thread.close()
        if self.deleting:
            await self._delete_closed()

    def _keep(self) -> None:
        """What the next open reads instead of the log's lines (blocking)."""
        log = self.thread.log
        if not log.writable:
            return
        head, attached = kept_parts(self.driver.surface, len(log.file_events))
        log.keep_index(head, attached)
        log.keep_snapshot()

    async def _delete_closed(self) -> None:
        from engine.workspace.removal import remove_thread

        thread = self.thread
        try:
            await asyncio.to_thread(remove_thread, self.home, thread.user_id, thread.id)
        except (TroveError, OSError) as exc:
            self.closing_failed = True
            self.closing_notice = f"Thread {thread.id} was not deleted: {exc}"
        else:
            self.closing_notice = f"Deleted thread {thread.id} and its archive."
