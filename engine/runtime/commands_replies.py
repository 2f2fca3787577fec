"""The commands about replies and prompts: /retry, /edit, /system, /copy.

/retry answers the last prompt again on a branch (engine.threads.retry: the
earlier reply stays the thread's until the new one ends whole, and stays in
the log either way). /edit hands the last prompt to the front end's input
(its `edit_prompt` hook); sending it replaces the last exchange, kept as a
branch as a rewind keeps it (engine.runtime.rewind.resend). Either, while a
reply runs, stops that reply first (kept, marked cancelled, as Esc keeps it):
whoever asks for another answer or another question has given up on this one.
/system shows or sets the thread's system prompt (engine.runtime.system_prompt).
/copy copies a reply or one of its code blocks through the front end's `copy`
hook (OSC 52 and the system clipboard), or, with none (`trove -p`), the
system clipboard alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator

from engine.events import AssistantMessage, TurnEnd, UserMessage
from engine.log import LogWriteError, SessionLog
from engine.runtime.commands import CommandError, FrontEnd
from engine.runtime.host import Host
from engine.runtime.rewind import RewindPoint, last_point
from engine.util.clipboard import system_copy, where_copied
from engine.util.safe_text import safe_text

Copy = Callable[[str, str], Awaitable[str]]
"""A front end's copy: (text, what it is) → the sentence saying where it went."""

RESET = "--reset"
"""`/system --reset`: back to the default system prompt."""


def retry_after(log: SessionLog) -> int:
    """The seq /retry branches after: the newest prompt on the line (typed, steered, or a
    fork's copy), read from the end; a CommandError when there is none to answer again."""
    withdrawn: set[int] = set()
    for event in reversed(log.events):
        kind = type(event)
        if kind is TurnEnd:
            withdrawn.update(event.withdrawn)  # type: ignore[union-attr]
        elif kind is UserMessage:
            message: UserMessage = event  # type: ignore[assignment]
            if message.checkpoint is not None or message.source == "inject":
                continue
            if message.seq in withdrawn:
                raise CommandError(
                    "nothing to retry: the last prompt was never answered (the model failed"
                    " before replying) and went back to the input; send it again"
                )
            return message.seq
    raise CommandError("nothing to retry yet: this thread has no prompt")


def replies(log: SessionLog) -> Iterator[str]:
    """The text of each reply on the thread's line, newest first (read from the end), made
    terminal-safe as it is shown: a copy never carries a reply's escape sequences."""
    for event in reversed(log.events):
        if type(event) is AssistantMessage and event.content:
            yield safe_text(event.content)


def code_blocks(text: str) -> list[str]:
    """The code blocks of a Markdown reply, top first, as CommonMark reads them (fenced with
    backticks or tildes, or indented), without their fences."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    return [t.content.removesuffix("\n") for t in tokens if t.type in ("fence", "code_block")]


def _number(word: str, usage: str) -> int:
    if not word.isdigit() or int(word) < 1:
        raise CommandError(usage)
    return int(word)


def choose_copy(log: SessionLog, args: str) -> tuple[str, str]:
    """What `/copy [N]` or `/copy code [N]` names: (text, how to call it)."""
    usage = "/copy [N] copies the Nth reply from the end; /copy code [N] a code block of the last"
    words = args.split()
    code = bool(words) and words[0].lower() == "code"
    if code:
        words = words[1:]
    if len(words) > 1:
        raise CommandError(usage)
    number = _number(words[0], usage) if words else None
    if not code:
        nth = number or 1
        for index, text in enumerate(replies(log), 1):
            if index == nth:
                return text, "the last reply" if nth == 1 else f"reply {nth} from the end"
        raise CommandError(
            "no reply to copy yet" if nth == 1 else f"no reply {nth} from the end: fewer replies"
        )
    last = next(replies(log), None)
    if last is None:
        raise CommandError("no reply to copy yet")
    blocks = code_blocks(last)
    if not blocks:
        raise CommandError("the last reply has no code block")
    if number is None:
        return blocks[-1], "its last code block"
    if number > len(blocks):
        raise CommandError(f"the last reply has {len(blocks)} code block(s); /copy code 1 to N")
    return blocks[number - 1], f"code block {number} of the last reply"


def _busy(runtime: Host, what: str) -> None:
    """Refuse, in one line, when the conversation cannot change now (a running reply is
    not a reason: the command stops it)."""
    log, driver = runtime.thread.log, runtime.driver
    if log.read_only is not None:
        raise CommandError(f"cannot {what}: {log.read_only}")
    if log.tail.open_compact is not None:
        raise CommandError(f"cannot {what} while a compaction runs: wait for it or cancel it")
    if driver.inbox:
        raise CommandError(f"cannot {what} while a prompt is queued: send it or remove it first")
    if driver.reserved:
        raise CommandError(f"cannot {what} while a command holds the conversation: wait for it")


def register_reply_commands(runtime: Host, front: FrontEnd | None) -> None:
    registry = runtime.commands
    log = runtime.thread.log

    @registry.add(
        "retry",
        "answer the last prompt again; the earlier reply is kept as a branch",
        show="quiet",  # the front ends say it as the retry's rewind line arrives
    )
    async def _retry(args: str) -> str:
        _busy(runtime, "retry")
        after = retry_after(log)
        driver = runtime.driver
        stopped = driver.running_turn is not None or driver.accepts_next_step
        if stopped:
            await driver.stop_turn()  # what it wrote stays, on the branch the retry leaves
            _busy(runtime, "retry")
        try:
            started = driver.regenerate(after)
        except LogWriteError as exc:
            raise CommandError(f"not retried: {exc}") from exc
        if started is None:
            raise CommandError("cannot retry now: a prompt is about to start its turn")
        head = "Stopped the reply; answering" if stopped else "Answering"
        return (
            f"{head} the last prompt again. The earlier reply stays in the log as a branch,"
            " and comes back if this one does not finish (Esc)."
        )

    @registry.add("edit", "put the last prompt in the input to edit; sending it replaces it")
    async def _edit(args: str) -> str:
        edit: Callable[[RewindPoint], str] | None = getattr(front, "edit_prompt", None)
        if edit is None:
            raise CommandError(
                "/edit needs an input line to edit in (the app or --plain); with -p,"
                " /retry answers the last prompt again"
            )
        _busy(runtime, "edit")
        point = last_point(log)
        if point is None:
            raise CommandError("nothing to edit yet: this thread has no prompt")
        if runtime.driver.running_turn is not None or runtime.driver.accepts_next_step:
            await runtime.driver.stop_turn()
        return edit(point)

    @registry.add(
        "system",
        f"show the system prompt; /system TEXT sets it, /system {RESET} restores the default",
        takes_args=True,
        usage="[TEXT]",
    )
    async def _system(args: str) -> str:
        system = runtime.system
        if not args:
            return _system_shown(system.custom, system.default)
        if log.read_only is not None:
            raise CommandError(f"not set: {log.read_only}")
        text = None if args == RESET else args
        try:
            system.set(text)
        except LogWriteError as exc:
            raise CommandError(f"not set: {exc}") from exc
        if text is None:
            return "System prompt back to the default, from the next request on."
        return f"System prompt set ({len(text):,} characters), from the next request on."

    @registry.add(
        "copy",
        "copy the last reply (/copy N: the Nth from the end; /copy code [N]: a code block)",
        takes_args=True,
        usage="[code] [N]",
    )
    async def _copy(args: str) -> str:
        text, what = choose_copy(log, args)
        copy: Copy | None = getattr(front, "copy", None)
        if copy is not None:
            return await copy(text, what)
        text = safe_text(text)
        tool = await asyncio.to_thread(system_copy, text)
        if tool is None:
            raise CommandError(where_copied(what, None, osc=False))
        return where_copied(what, tool, osc=False)


def _system_shown(custom: str | None, default: str) -> str:
    if custom is not None:
        head = f"System prompt (this thread's; /system {RESET} restores the default):"
        return head + "\n" + (safe_text(custom) or "(empty: no system message is sent)")
    if not default:
        return (
            "System prompt: none (the default for this model: its own chat template"
            " supplies one). /system TEXT sets one."
        )
    return "System prompt (the default; /system TEXT sets this thread's own):\n" + default
