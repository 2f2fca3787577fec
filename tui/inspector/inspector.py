"""The archive inspector: batches, search, reader and notes of the open thread."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static


class ArchiveInspector(Vertical):
    DEFAULT_CSS = """
    ArchiveInspector {
        display: none;
        width: 50%;
        border-left: solid $primary;
    }
    """

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.runtime: Any = None

    def compose(self) -> ComposeResult:
        yield Static("Archive inspector")

    def bind_runtime(self, runtime: Any) -> None:
        self.runtime = runtime

    def refresh_data(self) -> None:
        pass

    def open_batch(self, batch: int | None) -> None:
        pass

    def focus_default(self) -> None:
        pass
