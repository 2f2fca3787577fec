"""The system clipboard, and OSC 52 for a terminal's: where a copied reply goes.

A system clipboard tool (wl-copy, xclip, pbcopy) that exits 0 is confirmation;
OSC 52 asks the terminal to set its clipboard and nothing comes back, so a front
end never reports it as done. The text is made terminal-safe first by the
caller: it is pasted into terminals, where an escape in it would run as typed.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess

_TOOLS = (
    ("WAYLAND_DISPLAY", ["wl-copy"]),
    ("DISPLAY", ["xclip", "-selection", "clipboard"]),
    ("", ["pbcopy"]),
)


def system_copy(text: str) -> str | None:
    """The tool that took the text (it exited 0), or None when none could. Blocking (a
    child process, up to 2 s): off the event loop."""
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


def osc52(text: str) -> str:
    """The escape sequence that asks a terminal to put `text` on its clipboard (OSC 52,
    the "c" selection, base64, BEL-terminated as xterm and tmux read it)."""
    return "\x1b]52;c;" + base64.b64encode(text.encode()).decode("ascii") + "\a"


def where_copied(what: str, tool: str | None, *, osc: bool) -> str:
    """One sentence saying where `what` went, trusting only a tool that exited 0."""
    if tool is not None:
        return f"Copied {what} to the system clipboard ({tool})."
    if osc:
        return f"Sent {what} to the terminal's clipboard (OSC 52) — your terminal may ignore it."
    return f"Not copied: no clipboard tool here (wl-copy, xclip, pbcopy) took {what}."
