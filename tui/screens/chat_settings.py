"""What the chat screen is made with: what it shows that does not come from the thread."""

from __future__ import annotations

from collections.abc import Callable

from msgspec import Struct

from engine.model.backend import Backend


class ChatSettings(Struct, frozen=True):
    """The model and config as the screen names them, and the app's one hook into its
    mount (`show_opened`: show the thread in the first frame when it can)."""

    clock: Callable[[], float]
    model_label: str
    configured: bool
    config_label: str
    """The config file read, or (`config_read` False) where one would be read from first."""
    config_read: bool = False
    backend: Backend | None = None
    max_width: int | None = None
    """Columns the transcript's messages wrap at (`ui.max_width`; 0/None: the whole width)."""
    show_opened: Callable[[], bool] = lambda: False
