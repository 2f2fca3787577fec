"""The footer of key bindings, rebuilt only when the keys it shows change.

Textual's Footer removes and mounts all its keys whenever the screen's
bindings are refreshed: on every focus change and every `refresh_bindings`,
which a running turn calls as its state changes. Each rebuild costs a few
full-screen layouts on the UI loop that echoes keystrokes, while the keys
shown are nearly always the same.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._shown: tuple[object, ...] | None = None
        self._pending = False
        self._rebuilding = False
        self.rebuilds = 0
        """Times the keys were rebuilt (a test counts them)."""

    def shown_keys(self) -> tuple[object, ...]:
        """What the footer draws: each shown binding's key, label, action, state and tooltip."""
        keys: list[object] = [
            (binding.key, binding.description, binding.action, enabled, tooltip, binding.group)
            for (_, binding, enabled, tooltip) in self.screen.active_bindings.values()
            if binding.show
        ]
        keys.append((self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE))
        return tuple(keys)

    @property
    def catching_up(self) -> bool:
        """Whether a rebuild is due or running: the keys drawn may not be the screen's
        current ones yet (a test waits this out before it reads or snapshots them)."""
        return self._pending or self._rebuilding

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._bindings_ready = True
        # Refreshes until the next frame come to one check.
        here = self.is_attached and screen is self.screen
        if screen.app.app_focus and here and not self._pending:
            self._pending = True
            self.call_after_refresh(self._rebuild_if_changed)

    async def _rebuild_if_changed(self) -> None:
        self._pending = False
        if not self.is_attached:
            return
        shown = self.shown_keys()
        if shown != self._shown:
            self._shown = shown
            self.rebuilds += 1
            self._rebuilding = True
            try:
                await self.recompose()
            finally:
                self._rebuilding = False
