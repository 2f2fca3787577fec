"""Start-up without the cyclic collector, until the first ready frame.

Until the thread is open, the process makes almost nothing but long-lived
objects: modules, classes, the config, the screen's widgets and, on resume,
the thread's events and surface. The collector's young-generation passes
over them during imports and compose are pure overhead on the way to the
first frame, and the first pass after a resume would walk the whole
replayed thread. So collection is paused for start-up, and once the thread
is open, what exists is frozen (kept out of every later collection; O(1),
no pass over it) and collection is enabled again, before the transcript's
messages are built: their Markdown makes short-lived cycles, and left to
pile up those would cost RSS for good.

Once the model client is loaded, what exists is frozen a second time
(`freeze_long_lived`): it too lives as long as the app.
"""

from __future__ import annotations

import gc

from engine.util import collector

_paused = False
_frozen = False


def pause_collection() -> None:
    """Start-up's pause, counted with every other pause in the process."""
    global _paused
    if not _paused:
        _paused = True
        collector.hold()


def resume_collection() -> None:
    """Idempotent; a no-op unless `pause_collection` paused it."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        collector.release()


def freeze_long_lived() -> None:
    """Take what exists once the model client is loaded out of the collector's sight.

    Modules, classes, the SDK's schemas and the open thread live as long as the
    app, yet every full collection walks them all: long pauses of the UI loop
    while a reply streams (its widgets and strips trigger those collections).
    Frozen once, a full collection walks only what was made since; cyclic
    garbage that exists now is kept for good, a bounded one-off cost. A
    process-wide choice, so the front end makes it, not the engine.
    """
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()
