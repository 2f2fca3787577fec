"""The inspector's tabs: a `TabbedContent` that switches only when told to.

Textual's switches to a pane when a widget in it takes the focus, a message or two
after the focus moved. The inspector always picks its tab before it moves the focus,
so that message only ever repeats the tab already shown, or, when a key switched tabs
in between (F2 right after Ctrl+O), takes the user back to the tab they left.
"""

from __future__ import annotations

from textual.widgets import TabbedContent, TabPane


class TabSwitcher(TabbedContent):
    def _on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        event.stop()
        event.prevent_default()  # not Textual's own handler: the tab stays as chosen
