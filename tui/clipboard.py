"""Copying text out of the app, and saying honestly where it went.

OSC 52 (Textual's `copy_to_clipboard`) asks the terminal to set the clipboard;
nothing comes back, so it is never reported as done. A system clipboard tool
that exits 0 is confirmation; only then does the answer say "copied"
(engine.util.clipboard).
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.app import App

from engine.util.clipboard import system_copy, where_copied
from engine.util.safe_text import safe_text


def copy_text(app: App[Any], text: str, what: str | None = None) -> str:
    """Send `text` by OSC 52 and to a system clipboard tool; return a sentence saying which
    of them can be trusted. `what` names the text ("this page"); default: its length.

    The text is made terminal-safe first: it is pasted into terminals, where an
    escape in it (a bracketed-paste end, say) would run as if typed.
    """
    text = safe_text(text)
    app.copy_to_clipboard(text)
    what = what or f"{len(text):,} characters"
    return where_copied(what, system_copy(text), osc=True)


async def copy_text_off_loop(app: App[Any], text: str, what: str) -> str:
    """`copy_text` with the clipboard tool run off the event loop (a command's copy)."""
    text = safe_text(text)
    app.copy_to_clipboard(text)
    return where_copied(what, await asyncio.to_thread(system_copy, text), osc=True)
