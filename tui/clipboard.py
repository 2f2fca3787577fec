"""Copying text out of the app, and saying honestly where it went.

OSC 52 (Textual's `copy_to_clipboard`) asks the terminal to set the clipboard;
nothing comes back, so it is never reported as done. A system clipboard tool
that exits 0 is confirmation; only then does the answer say "copied"
(engine.util.clipboard). The tool is a child process that may take seconds, so
it always runs in a thread: a key (Ctrl+Y) hears of it in a toast when it is
done, a command (/copy) awaits it. One tool runs at a time, in the order asked,
so the clipboard ends with the newest copy.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from textual.app import App

from engine.util.clipboard import system_copy, where_copied
from engine.util.safe_text import safe_text

_TURNS: weakref.WeakKeyDictionary[App[Any], asyncio.Lock] = weakref.WeakKeyDictionary()
"""Each app's clipboard tools, one at a time."""


def copy_text(app: App[Any], text: str, what: str | None = None) -> None:
    """Send `text` by OSC 52 now, and to a system clipboard tool in a worker; a toast says
    which of them can be trusted once the tool is done. `what` names the text ("this
    page"); default: its length.

    The text is made terminal-safe first: it is pasted into terminals, where an
    escape in it (a bracketed-paste end, say) would run as if typed.
    """
    text = safe_text(text)
    app.copy_to_clipboard(text)
    what = what or f"{len(text):,} characters"
    app.run_worker(_copy_and_say(app, text, what), group="clipboard", exit_on_error=False)


async def _copy_and_say(app: App[Any], text: str, what: str) -> None:
    tool = await _system_copy(app, text)
    app.notify(where_copied(what, tool, osc=True), severity="information" if tool else "warning")


async def copy_text_off_loop(app: App[Any], text: str, what: str) -> str:
    """`copy_text` for a command: the sentence saying where the text went, once the tool is
    done (the command's answer, so no toast)."""
    text = safe_text(text)
    app.copy_to_clipboard(text)
    return where_copied(what, await _system_copy(app, text), osc=True)


async def _system_copy(app: App[Any], text: str) -> str | None:
    turn = _TURNS.get(app)
    if turn is None:
        turn = _TURNS[app] = asyncio.Lock()
    async with turn:
        return await asyncio.to_thread(system_copy, text)
