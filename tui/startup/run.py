"""`trove`: start the Textual app."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from engine.config import Config
from engine.model.backend import Backend

if TYPE_CHECKING:
    from tui.startup.opening import Opening


SCREEN_FPS = "500"
"""How often Textual may draw a changed screen (`TEXTUAL_FPS`, read as Textual is first
imported). A change waits for the next tick, and a tick the loop was busy for is skipped
to the one after: a fast tick brings a key's echo as soon as the loop is free (a tick
with nothing changed costs nothing). bench/tui.py measures it. A streaming reply still
draws at its own pace, and a TEXTUAL_FPS set by the user wins."""


def run_tui(
    config: Config, home: Path, *, thread_id: str | None = None, backend: Backend | None = None
) -> int:
    os.environ.setdefault("TEXTUAL_FPS", SCREEN_FPS)
    if thread_id is not None:
        from engine.threads.paths import thread_dir

        thread_dir(home, config.user_id, thread_id)  # a bad id is a usage error, early
        if not (thread_dir(home, config.user_id, thread_id) / "session.jsonl").is_file():
            from engine.threads.paths import ThreadNotFoundError

            raise ThreadNotFoundError(f"no thread {thread_id!r} for user {config.user_id!r}")
    from tui.startup.collection import pause_collection, resume_collection

    pause_collection()  # until the first ready frame (the app resumes it then)
    try:
        return _run(config, home, thread_id=thread_id, backend=backend)
    finally:
        resume_collection()


def _run(config: Config, home: Path, *, thread_id: str | None, backend: Backend | None) -> int:
    early = None
    if thread_id is not None:
        from tui.startup.opening import Opening

        early = Opening(config, home, thread_id)  # beside the app's imports and start-up
    try:
        return _run_app(config, home, thread_id=thread_id, backend=backend, early=early)
    finally:
        if early is not None:
            early.discard()


def _run_app(
    config: Config,
    home: Path,
    *,
    thread_id: str | None,
    backend: Backend | None,
    early: Opening | None,
) -> int:
    import logging

    from textual.logging import TextualHandler
    from textual.theme import BUILTIN_THEMES

    from engine.config import ConfigError
    from tui.app import TroveApp
    from tui.startup import full_map, strip_caches, strip_cycles, switching
    from tui.startup.geometry_caches import bound_geometry_caches

    if config.ui.theme not in BUILTIN_THEMES:
        names = ", ".join(sorted(BUILTIN_THEMES))
        raise ConfigError(
            f"{config.source or 'config'}: ui.theme: expected one of {names}, "
            f"got {config.ui.theme!r}"
        )

    # Engine warnings (an isolated listener failure) go to Textual's log, not
    # onto the screen through stderr.
    engine_logger = logging.getLogger("trove")
    engine_logger.addHandler(TextualHandler())
    engine_logger.propagate = False
    bound_geometry_caches()
    strip_cycles.install()
    strip_caches.install()
    full_map.install()
    app = TroveApp(config, home, thread_id=thread_id, backend=backend, early=early)
    switching.starting()
    try:
        result = app.run()
    finally:
        switching.settled()
    if app.unsent_text is not None:
        print("Your unsent prompt (the thread could not keep it):")
        print(app.unsent_text)
    if app.resume_hint is not None:
        print(app.resume_hint)
    return result or 0
