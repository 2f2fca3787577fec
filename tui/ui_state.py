"""What the app keeps between launches that is not config: the theme picked in the palette.

`ui-state.json` in the data directory, read through `read_derived` (a link is
not followed, a FIFO not waited on, a large file not read) and replaced whole
through `write_derived`, from a worker thread. Anything wrong with it (missing,
damaged, a theme this Textual lacks) means the config's `ui.theme`, never an
error. The config's theme at the time of the pick is kept beside it: once the
config names another theme, the config wins, as the newer wish.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import msgspec

from engine.util.private import private_dir, read_derived, write_derived

STATE_NAME = "ui-state.json"
MAX_BYTES = 64 * 1024
"""Far more than the state holds; a larger file is not read."""


class UiState(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    theme: str | None = None
    """The theme picked in the command palette (None: none picked)."""
    config_theme: str | None = None
    """The config's `ui.theme` when it was picked."""


def load_state(home: Path) -> UiState:
    """The kept state; an empty one when there is none or it cannot be trusted."""
    try:
        return msgspec.json.decode(read_derived(home / STATE_NAME, MAX_BYTES), type=UiState)
    except (OSError, msgspec.DecodeError):  # ValidationError is a DecodeError
        return UiState()


def save_state(home: Path, state: UiState) -> bool:
    """Replace the kept state atomically; False when it could not be written (blocking)."""
    try:
        private_dir(home)
    except OSError:
        return False
    return write_derived(home / STATE_NAME, [msgspec.json.encode(state)])


def theme_to_use(state: UiState, config_theme: str, available: Collection[str]) -> str:
    """The picked theme while the config still names the theme it was picked over."""
    picked = state.theme
    if picked is not None and picked in available and state.config_theme == config_theme:
        return picked
    return config_theme
