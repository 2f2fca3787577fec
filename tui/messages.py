"""Messages widgets post up to the chat screen, which decides what happens."""

from __future__ import annotations

from textual.message import Message


class PromptSubmitted(Message):
    """The user sent the prompt; `steer` asks for next-step placement."""

    def __init__(self, text: str, *, steer: bool = False) -> None:
        super().__init__()
        self.text = text
        self.steer = steer


class QueueItemEdit(Message):
    """The user wants to change a queued prompt before it starts."""

    def __init__(self, item_id: int) -> None:
        super().__init__()
        self.item_id = item_id


class QueueItemRemove(Message):
    def __init__(self, item_id: int) -> None:
        super().__init__()
        self.item_id = item_id


class OpenBatch(Message):
    """Show a compacted batch in the archive inspector (None: not archived yet)."""

    def __init__(self, batch: int | None) -> None:
        super().__init__()
        self.batch = batch


class OpenThread(Message):
    """Switch to this thread of the user (the reader's source is from it)."""

    def __init__(self, thread_id: str) -> None:
        super().__init__()
        self.thread_id = thread_id


class CloseInspector(Message):
    """Esc in the archive inspector: hide it."""


class ScrollTranscript(Message):
    """A scroll key pressed in the prompt, for the transcript (`action`: one of its
    scroll actions, e.g. "page_up")."""

    def __init__(self, action: str) -> None:
        super().__init__()
        self.action = action
