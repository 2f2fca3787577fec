"""How to run this Trove again, as a person would type it: for the `resume with:` hint."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

_MODULE_MAIN = Path("cli") / "main.py"


def trove_command(argv0: str | None = None, *, path: str | None = None) -> str:
    """The words that start this Trove from any folder, shell-quoted.

    `trove` when the `trove` that `PATH` finds is the script that ran; the
    script's full path when it is not on `PATH` (a virtual environment not
    activated) or `PATH` finds another one first; `python -m cli.main` with this
    interpreter's path when Trove was run as a module. `path` stands in for
    `$PATH` (tests). Anything else (Trove inside another program) is `trove`.
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    if not argv0:
        return "trove"
    ran = Path(argv0)
    if ran.name == "trove":
        found = shutil.which("trove", path=path)
        try:
            same = found is not None and os.path.samefile(found, ran)
        except OSError:
            same = False
        return "trove" if same else shlex.quote(os.path.abspath(ran))
    if ran.parts[-2:] == _MODULE_MAIN.parts:
        return f"{shlex.quote(sys.executable)} -m cli.main"
    return "trove"
