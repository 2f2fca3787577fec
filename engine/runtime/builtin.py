"""The commands every thread has, whatever front end runs it.

Commands that change which thread is open (/new, /fork, /threads ID, /delete) or
end the session (/quit) do the engine's part here and ask the front end,
through its FrontEnd hook, to do the rest once the command has returned:
only the front end knows how to close its view of one thread and open
another.
"""

from __future__ import annotations

import asyncio

from engine.compaction import CompactionCancelled, CompactionError
from engine.driver import DriverClosedError
from engine.runtime.commands import CommandError, FrontEnd
from engine.runtime.commands_model import register_model_command
from engine.runtime.commands_replies import register_reply_commands
from engine.runtime.commands_threads import register_thread_commands
from engine.runtime.export import ExportError, export_thread
from engine.runtime.host import Host
from engine.runtime.rewind import RewindPoint, RewindRefused, choose, points, rewind
from engine.util.safe_text import safe_text
from engine.workspace.fork import fork_thread

TOOLS_OFF = (
    "\nModel tools (task_note, history_search, history_read) are off for this"
    " model (set model.tools: on to offer them); /compact, history search"
    " and the inspector still work."
)


def register_builtins(runtime: Host, front: FrontEnd | None) -> None:
    """Register the engine's commands, then the front end's own (which win on a name)."""
    registry = runtime.commands
    home = runtime.home

    @registry.add("help", "list commands and what they do")
    async def _help(args: str) -> str:
        text = registry.help_text()
        if runtime.backend is not None and not runtime.backend.tools_enabled:
            text += TOOLS_OFF
        return text

    @registry.add("compact", "summarize older messages now; the originals stay searchable")
    async def _compact(args: str) -> str:
        try:
            outcome = await runtime.compaction.compact_now(runtime.driver)
        except CompactionError as exc:
            raise CommandError(str(exc)) from exc
        except CompactionCancelled as late:
            # The cancel came after the checkpoint was written: say what is true.
            return late.outcome.describe() + " (The cancel came too late to stop it.)"
        if outcome is None:
            return "Nothing to compact yet: the conversation is too short."
        return outcome.describe()

    @registry.add(
        "export",
        "write the thread as Markdown and JSON (to exports/, or PATH: a folder, .md or .json)",
        takes_args=True,
        usage="[PATH]",
    )
    async def _export(args: str) -> str:
        log = runtime.thread.log
        events = log.events
        count = len(events)  # taken on the loop; the worker reads that many (older: from the file)
        system = log.tail.system
        try:
            paths = await asyncio.to_thread(
                lambda: export_thread(home, runtime.thread.id, list(events[:count]), args, system)
            )
        except ExportError as exc:
            raise CommandError(str(exc)) from exc
        return "Exported to " + " and ".join(str(p) for p in paths)

    @registry.add(
        "steer",
        "add TEXT to the running reply before its next model request",
        takes_args=True,
        usage="TEXT",
    )
    async def _steer(args: str) -> str:
        if not args:
            raise CommandError("/steer TEXT: say what the running reply should take into account")
        driver = runtime.driver
        steering = driver.accepts_next_step
        try:
            item = driver.send(args, placement="next-step")
        except (OSError, DriverClosedError) as exc:
            raise CommandError(f"not sent: {exc}") from exc
        if steering:
            return (
                f"Steering the running reply (#{item}): the model reads it before its next request."
            )
        return f"Nothing to steer right now: sent as a prompt of its own (#{item})."

    register_thread_commands(runtime, front)
    register_model_command(runtime, front)
    register_reply_commands(runtime, front)
    _register_rewind(runtime, front)
    if front is not None:
        _register_switches(runtime, front)
        for command in front.actions():
            registry.register(command)


def _register_switches(runtime: Host, front: FrontEnd) -> None:
    registry = runtime.commands

    @registry.add("new", "start a new thread", show="quiet")
    async def _new(args: str) -> str:
        front.open_thread(None)
        return "new thread"

    @registry.add("clear", "start a new thread (this one stays in /threads)", show="quiet")
    async def _clear(args: str) -> str:
        front.open_thread(None)
        return "new thread"

    @registry.add("fork", "copy this thread's messages and notes into a new thread")
    async def _fork(args: str) -> str:
        if not runtime.thread.log.exists:
            raise CommandError("nothing to fork yet: this thread has no messages")
        child = await asyncio.to_thread(
            fork_thread, runtime.home, runtime.config.user_id, runtime.thread.id
        )
        front.open_thread(child)
        return (
            f"Forked into thread {child}. The archive stays with the parent "
            f"({runtime.thread.id}: history search --thread {runtime.thread.id}), so notes' "
            "citations show as unavailable here until checked again."
        )

    @registry.add("quit", "leave Trove (queued prompts stay in the thread)", show="quiet")
    async def _quit(args: str) -> str:
        front.quit()
        return "bye"

    @registry.add("exit", "leave Trove, as /quit does", show="quiet")
    async def _exit(args: str) -> str:
        return await _quit(args)


def rewind_listing(points: list[RewindPoint]) -> str:
    """`/rewind` without a number: the prompts, newest first, numbered for `/rewind N`."""
    if not points:
        return "Nothing to rewind to yet: this thread has no prompts."
    lines = ["Prompts to rewind to (newest first; ~ marks another branch):"]
    for point in points:
        mark = " " if point.on_line else "~"
        first = " ".join(safe_text(point.text).split())
        short = first if len(first) <= 60 else first[:59] + "…"
        lines.append(f"{point.number:>3} {mark} {point.day} {point.time}  {short}")
    lines.append("/rewind N goes back to just before prompt N; nothing after it is deleted.")
    return "\n".join(lines)


def _register_rewind(runtime: Host, front: FrontEnd | None) -> None:
    @runtime.commands.add(
        "rewind",
        "go back to just before an earlier prompt (/rewind N); the rest stays as a branch",
        takes_args=True,
        usage="[N]",
    )
    async def _rewind(args: str) -> str:
        log = runtime.thread.log
        # Every prompt of the thread: its older events are read in a worker.
        listed = await asyncio.to_thread(points, log, len(log.file_events))
        if not args:
            return rewind_listing(listed)
        point = rewind_numbered(runtime, args, listed)
        prefill = getattr(front, "prefill", None)
        said = f"Rewound to just before prompt {point.number} ({point.day} {point.time})."
        if callable(prefill) and prefill(point.text):
            return said + " Its text is in the input, ready to edit and send."
        return said + " Its text, to send again or edit:\n" + safe_text(point.text)


def rewind_numbered(
    runtime: Host, args: str, listed: list[RewindPoint] | None = None
) -> RewindPoint:
    """`/rewind N` done (N among `listed`, or the points listed now): the point gone back
    to, or a CommandError saying why not."""
    if not args.isdigit():
        raise CommandError("/rewind N: N is a prompt's number from /rewind")
    log = runtime.thread.log
    try:
        point = choose(log, int(args), listed)
        rewind(runtime.driver, log, point)
    except RewindRefused as exc:
        raise CommandError(str(exc)) from exc
    return point
