"""The footer of key bindings, rebuilt only when the keys it shows change.

Textual's Footer removes and mounts all its keys whenever the screen's
bindings are refreshed: on every focus change and every `refresh_bindings`,
which a running turn calls as its state changes. Each rebuild costs a few
full-screen layouts on the UI loop that echoes keystrokes, while the keys
shown are nearly always the same. When they change by a key or two (a turn
starts: "Esc Cancel"; it ends), those keys alone are mounted or removed, and a
key's enabled state is set in place: the rest of the footer stays as it is.
"""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

Entry = tuple[Binding, bool, str]
"""A key the footer draws: its binding, whether it is enabled, its tooltip."""


class KeyFooter(Footer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._shown: tuple[object, ...] | None = None
        self._pending = False
        self._rebuilding = False
        self.rebuilds = 0
        """Times the keys were rebuilt whole (a test counts them)."""
        self.patches = 0
        """Times the keys were changed in place (a test counts them)."""

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
        if shown == self._shown:
            return
        self._shown = shown
        self._rebuilding = True
        try:
            if await self._patch():
                self.patches += 1
            else:
                self.rebuilds += 1
                await self.recompose()
        finally:
            self._rebuilding = False

    def _entries(self) -> list[Entry] | None:
        """The keys `Footer.compose` draws, in its order (the first binding of each action);
        None when it would group some (those are rebuilt whole)."""
        by_action: dict[str, Entry] = {}
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if not binding.show:
                continue
            if binding.group is not None:
                return None
            by_action.setdefault(binding.action, (binding, enabled, tooltip))
        return list(by_action.values())

    def _same_key(self, widget: FooterKey, entry: Entry) -> bool:
        binding, _, tooltip = entry
        return (widget.key, widget.key_display, widget.description, widget.tooltip or "") == (
            binding.key,
            self.app.get_key_display(binding),
            binding.description,
            tooltip or "",
        )

    async def _patch(self) -> bool:
        """Bring the drawn keys to the screen's by mounting and removing only the keys that
        came or went; False (nothing changed) when that cannot be done in place."""
        entries = self._entries()
        children = list(self.children)
        if entries is None or not all(isinstance(c, FooterKey) for c in children):
            return False
        keys = [c for c in children if isinstance(c, FooterKey)]
        drawn = [k for k in keys if not k.has_class("-command-palette")]
        palette = keys[len(drawn) :]
        if self._rebuilt_palette(palette) or keys[: len(drawn)] != drawn:
            return False
        # Walk both in order: an entry is drawn by the next drawn key that is the same key
        # (those skipped to reach it went), else it is a new key.
        kept: list[tuple[FooterKey, bool]] = []
        added: list[tuple[int, Entry]] = []
        dropped: list[FooterKey] = []
        at = 0
        for entry in entries:
            same = next((j for j in range(at, len(drawn)) if self._same_key(drawn[j], entry)), None)
            if same is None:
                added.append((len(kept) + len(added), entry))
                continue
            dropped.extend(drawn[at:same])
            kept.append((drawn[same], entry[1]))
            at = same + 1
        dropped.extend(drawn[at:])
        for widget, enabled in kept:
            if widget._disabled == enabled:
                widget._disabled = not enabled
                widget.set_class(not enabled, "-disabled")
        if dropped:
            await self.remove_children(dropped)
        for index, (binding, enabled, tooltip) in added:
            with self._context():  # data_bind binds to the active message pump: this footer
                key = FooterKey(
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    disabled=not enabled,
                    tooltip=tooltip,
                ).data_bind(compact=Footer.compact)
            following = [k for k in self.children if isinstance(k, FooterKey)]
            if index < len(following):
                await self.mount(key, before=following[index])
            else:
                await self.mount(key)
        self.styles.grid_size_columns = len(entries)
        return True

    def _rebuilt_palette(self, palette: list[FooterKey]) -> bool:
        """Whether the command palette's key would be drawn otherwise than it is."""
        wanted = self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE
        return len(palette) != (1 if wanted else 0)
