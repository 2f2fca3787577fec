"""What the first streamed reply draws with is imported (and the common lexers built) by
the warm-up's worker thread.

Imported on the loop as the first reply arrived, its widget and Rich's
Markdown held the loop for tens of milliseconds (bench/content.py: the first
turn's keys). A fresh interpreter shows what `prepare_first_turn` leaves imported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK = """
import sys, threading
import tui.screens.warm_up as warm_up
before = {name for name in ("tui.widgets.assistant_message", "markdown_it", "rich.markdown",
                          "engine.continuity.capture")
          if name in sys.modules}
worker = threading.Thread(target=warm_up.prepare_first_turn)
worker.start(); worker.join()
from tui import code_lexers
from tui.live import markdown
after = {name for name in ("tui.widgets.assistant_message", "markdown_it", "rich.markdown",
                          "engine.continuity.capture")
         if name in sys.modules}
print(sorted(before), sorted(after), markdown._PARSER is not None,
      all(code_lexers.built(name) for name in code_lexers.COMMON))
"""


def test_prepare_first_turn_imports_continuity_and_the_reply_modules_off_the_loop() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == (
        "[] ['engine.continuity.capture', 'markdown_it', 'rich.markdown', "
        "'tui.widgets.assistant_message'] True True"
    ), out
