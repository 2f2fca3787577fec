"""The commands about threads as a whole: /threads (list, switch), /rename, /delete.

A thread is named by its id, its number in the list (1 is the thread with the
newest message) or a unique prefix of its id (engine.workspace.listing).
/delete asks first through the front end's `confirm` hook; where nobody can be
asked (`trove -p`), only a thread named by its full id is deleted. The thread
in use is deleted once it is closed: the front end switches to a new thread,
and closing the old one removes it (Runtime.aclose).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from engine.events import SessionTitle
from engine.log import LogWriteError
from engine.runtime.commands import CommandError, FrontEnd
from engine.runtime.host import Host
from engine.threads.lock import ThreadLockedError
from engine.threads.paths import ThreadNotFoundError
from engine.util.safe_text import safe_text
from engine.workspace.listing import (
    AmbiguousThreadError,
    ThreadInfo,
    list_threads,
    resolve_thread,
)
from engine.workspace.removal import remove_thread

Confirm = Callable[[str], Awaitable[bool]]
"""A front end's way to ask a yes/no question (True: yes)."""


def thread_line(info: ThreadInfo, number: int, current: str) -> str:
    """One thread as /threads lists it: number, mark, id, when, title, `[-p]`."""
    mark = "*" if info.id == current else " "
    stamp = info.changed.astimezone().strftime("%Y-%m-%d %H:%M")
    one_shot = "  [-p]" if info.one_shot else ""
    return f"{number:>3} {mark} {info.id}  {stamp}  {safe_text(info.title)}{one_shot}"


async def named_thread(runtime: Host, ref: str) -> str:
    """The id `ref` names (see the module docstring), or a CommandError saying why not."""
    thread = runtime.thread
    if ref == thread.id:
        return ref
    try:
        return await asyncio.to_thread(resolve_thread, thread.home, thread.user_id, ref)
    except AmbiguousThreadError as exc:
        raise CommandError(str(exc)) from exc
    except ThreadNotFoundError as exc:
        raise CommandError(f"no thread {ref!r} (/threads lists them)") from exc


async def switch_named(runtime: Host, front: FrontEnd | None, ref: str) -> str:
    """`/threads REF`: switch to the thread it names, once the command has returned."""
    target = await named_thread(runtime, ref)
    if target == runtime.thread.id:
        return f"You are in thread {target} already."
    if front is None:
        raise CommandError("switching threads needs a front end")
    front.open_thread(target)
    return f"Switching to thread {target}."


async def _title(runtime: Host, thread_id: str) -> str:
    """What the lists call the thread, to say what a question is about."""
    from engine.workspace.summary import first_prompt, summarize

    thread = runtime.thread
    if thread_id == thread.id:
        renamed = thread.log.facts.title  # kept as the log appends: nothing read
        return safe_text(renamed) if renamed else first_prompt(thread.log.file_events)
    try:
        summary = await asyncio.to_thread(summarize, thread.home, thread.user_id, thread_id)
    except (OSError, ThreadNotFoundError):
        return "unreadable"
    return summary.title


def register_thread_commands(runtime: Host, front: FrontEnd | None) -> None:
    registry = runtime.commands
    thread = runtime.thread

    @registry.add(
        "threads",
        "list your threads; /threads N (or an id or its prefix) switches to one",
        takes_args=True,
        usage="[THREAD]",
    )
    async def _threads(args: str) -> str:
        if args:
            return await switch_named(runtime, front, args)
        threads = await asyncio.to_thread(list_threads, thread.home, thread.user_id)
        lines = [thread_line(info, n, thread.id) for n, info in enumerate(threads, 1)]
        head = "Threads (newest message first; * is this one; /threads N switches):"
        return "\n".join([head, *lines]) if lines else "No threads yet."

    @registry.add(
        "rename", "give this thread a title for the lists", takes_args=True, usage="TITLE"
    )
    async def _rename(args: str) -> str:
        title = " ".join(args.split())
        if not title:
            raise CommandError("/rename TITLE: say what to call this thread")
        if not thread.log.exists:
            raise CommandError("nothing to rename yet: this thread has no messages")
        try:
            thread.log.append(SessionTitle(title=title))
        except LogWriteError as exc:
            raise CommandError(f"not renamed: {exc}") from exc
        return f"Renamed this thread: {safe_text(title)}"

    @registry.add(
        "delete",
        "delete this thread (or THREAD) with its archive, after asking",
        takes_args=True,
        usage="[THREAD]",
    )
    async def _delete(args: str) -> str:
        target = await named_thread(runtime, args) if args else thread.id
        current = target == thread.id
        if current and not thread.log.exists:
            raise CommandError("nothing to delete: this thread has no messages (it is not on disk)")
        if current and thread.read_only:
            raise CommandError(f"not deleted: {thread.read_only}")
        confirm: Confirm | None = getattr(front, "confirm", None)
        if confirm is None:
            # Nobody to ask (`trove -p`): naming the thread in full is the confirmation.
            if args != target:
                raise CommandError(
                    "/delete cannot ask here: name the thread by its full id"
                    f" (/delete {target}) to delete it without being asked"
                )
        else:
            what = "this thread" if current else "thread"
            title = await _title(runtime, target)
            question = f"Delete {what} {target} ({title}) with its archive? This cannot be undone."
            if not await confirm(question):
                return "Not deleted."
        if current:
            runtime.delete_on_close()
            if front is not None:
                front.open_thread(None)
                return f"Closing thread {target} to delete it; a new thread begins."
            return f"Deleting thread {target} as it closes."
        try:
            await asyncio.to_thread(remove_thread, thread.home, thread.user_id, target)
        except (ThreadLockedError, ThreadNotFoundError) as exc:
            raise CommandError(f"not deleted: {exc}") from exc
        except OSError as exc:
            raise CommandError(f"not all of thread {target} was deleted: {exc}") from exc
        return f"Deleted thread {target} and its archive."
