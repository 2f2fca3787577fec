"""Messages the inspector's tabs post up to the inspector."""

from __future__ import annotations

from textual.message import Message


class OpenSource(Message):
    """Show a source in the Reader (from a batch, a search result or a citation).

    `offset` is the start of the page to show (a multiple of the page size);
    `highlight` is a search query whose words the Reader marks; `thread` names
    another thread of the user when the source is from an all-threads search.
    """

    def __init__(
        self,
        source_id: str,
        *,
        offset: int = 0,
        highlight: str | None = None,
        thread: str | None = None,
    ) -> None:
        super().__init__()
        self.source_id = source_id
        self.offset = offset
        self.highlight = highlight
        self.thread = thread
        """Another thread of the user the source belongs to (an all-threads hit)."""
