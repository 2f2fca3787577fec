"""The app's side of a rewind: the picker, the engine's refusal as a notice, the prefill.

The engine (engine.rewind) does the rewind itself; the transcript and the
inspector follow the `session/rewind` event like any other (tui.screens.chat).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.rewind import RewindRefused, points, refusal, rewind

if TYPE_CHECKING:
    from tui.app import TroveApp


async def pick_and_rewind(app: TroveApp) -> None:
    """Open the picker (in a worker: it waits for the choice), then go back there."""
    runtime = app.runtime
    if runtime is None:
        return
    log, driver = runtime.thread.log, runtime.driver
    why = refusal(driver, log)
    if why is not None:
        app.notify(why, severity="warning")
        return
    listed = points(log)
    if not listed:
        app.notify("Nothing to rewind to yet: this thread has no prompts.")
        return
    from tui.screens.rewind import RewindScreen

    chosen = await app.push_screen_wait(RewindScreen(listed))
    if chosen is None or app.runtime is not runtime:
        return
    try:
        rewind(driver, log, chosen)
    except RewindRefused as exc:  # something started while the picker was open
        app.notify(str(exc), severity="warning")
        return
    app.chat.prefill(chosen.text)
