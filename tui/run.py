"""`trove`: start the Textual app."""

from __future__ import annotations

from pathlib import Path

from engine.backend import Backend
from engine.config import Config


def run_tui(
    config: Config, home: Path, *, thread_id: str | None = None, backend: Backend | None = None
) -> int:
    if thread_id is not None:
        from engine.session import thread_dir

        thread_dir(home, config.user_id, thread_id)  # a bad id is a usage error, early
        if not (thread_dir(home, config.user_id, thread_id) / "session.jsonl").is_file():
            from engine.session import ThreadNotFoundError

            raise ThreadNotFoundError(f"no thread {thread_id!r} for user {config.user_id!r}")
    from tui.startup import pause_collection, resume_collection

    pause_collection()  # until the first ready frame (the app resumes it then)
    try:
        return _run(config, home, thread_id=thread_id, backend=backend)
    finally:
        resume_collection()


def _run(config: Config, home: Path, *, thread_id: str | None, backend: Backend | None) -> int:
    from textual.theme import BUILTIN_THEMES

    from engine.config import ConfigError
    from tui.app import TroveApp

    if config.ui.theme not in BUILTIN_THEMES:
        names = ", ".join(sorted(BUILTIN_THEMES))
        raise ConfigError(
            f"{config.source or 'config'}: ui.theme: expected one of {names}, "
            f"got {config.ui.theme!r}"
        )
    import logging

    from textual.logging import TextualHandler

    # Engine warnings (an isolated listener failure) go to Textual's log, not
    # onto the screen through stderr.
    engine_logger = logging.getLogger("trove")
    engine_logger.addHandler(TextualHandler())
    engine_logger.propagate = False
    app = TroveApp(config, home, thread_id=thread_id, backend=backend)
    result = app.run()
    if app.resume_hint is not None:
        print(app.resume_hint)
    return result or 0
