"""The archive inspector pane (see inspector.py)."""

from tui.inspector.inspector import ArchiveInspector

__all__ = ["ArchiveInspector"]
