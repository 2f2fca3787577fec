"""Copying text out of the app, and saying honestly where it went.

OSC 52 asks the terminal to set the clipboard; nothing comes back, so it is
never reported as done. A system clipboard tool (wl-copy, xclip, pbcopy)
that exits 0 is confirmation; only then does the answer say "copied".
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

from textual.app import App

from engine.util.safe_text import safe_text

_TOOLS = (
    ("WAYLAND_DISPLAY", ["wl-copy"]),
    ("DISPLAY", ["xclip", "-selection", "clipboard"]),
    ("", ["pbcopy"]),
)


def copy_text(app: App[Any], text: str, what: str | None = None) -> str:
    """Send `text` by OSC 52 and to a system clipboard tool; return a sentence saying which
    of them can be trusted. `what` names the text ("this page"); default: its length.

    The text is made terminal-safe first: it is pasted into terminals, where an
    escape in it (a bracketed-paste end, say) would run as if typed.
    """
    text = safe_text(text)
    app.copy_to_clipboard(text)
    what = what or f"{len(text):,} characters"
    tool = _system_copy(text)
    if tool is not None:
        return f"Copied {what} to the system clipboard ({tool})."
    return f"Sent {what} to the terminal's clipboard (OSC 52) — your terminal may ignore it."


def _system_copy(text: str) -> str | None:
    """The tool that took the text (it exited 0), or None when none could."""
    for needs, command in _TOOLS:
        if needs and not os.environ.get(needs):
            continue  # an X or Wayland tool with no display to talk to fails anyway
        if shutil.which(command[0]) is None:
            continue
        try:
            done = subprocess.run(
                command,
                input=text.encode(),
                timeout=2,
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return command[0]
    return None
