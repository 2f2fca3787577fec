"""The reply being streamed: Markdown fed through Textual's MarkdownStream.

MarkdownStream merges fragments that arrive faster than they can be
rendered, so a fast model never builds a backlog and the document is never
re-rendered per token; it is the only buffer. Imported on the first reply,
not at launch. The text shown (and copied) is the reply made terminal-safe;
an escape sequence split across deltas is held back until it is whole, then
dropped.
"""

from __future__ import annotations

import asyncio

from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownStream

from engine.safe_text import SafeStream, safe_text


class AssistantMessage(Markdown):
    DEFAULT_CSS = """
    AssistantMessage {
        margin: 1 0 0 0;
        padding: 0 1;
        background: transparent;
    }
    AssistantMessage.-cancelled { border-left: outer $warning; }
    AssistantMessage.-interrupted { border-left: outer $error; }
    """

    def __init__(self, text: str = "", *, seq: int | None = None) -> None:
        text = safe_text(text)
        super().__init__(text)
        self.seq = seq
        self.text = text
        self._safe = SafeStream()
        self._stream: MarkdownStream | None = None
        self._writes: set[asyncio.Task[None]] = set()
        """Hand-offs to the stream not yet run; tasks start in order, so fragments keep theirs."""

    def write(self, fragment: str) -> None:
        """Called per delta from the engine; returns at once, never awaits rendering."""
        fragment = self._safe.feed(fragment)
        if not fragment:
            return
        self.text += fragment
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        task = asyncio.ensure_future(self._stream.write(fragment))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def finish(
        self, text: str, *, cancelled: bool = False, interrupted: bool = False
    ) -> None:
        """The final text from the log wins over whatever the stream showed.

        After streaming, the whole text is rendered once more: the reply may
        end in the same tick as its last delta (before the stream ever
        rendered it), and stopping a MarkdownStream mid-append can leave an
        append that lands after the stream's last one, showing a stale tail.
        """
        text = safe_text(text)
        stream, self._stream = self._stream, None
        if stream is not None:
            writes = list(self._writes)
            for task in writes:
                task.cancel()  # the full render below shows their text
            await asyncio.gather(*writes, return_exceptions=True)
            await stream.stop()
            # An append the stop interrupted is already scheduled: let it take the
            # document lock first, so the full render below comes after it.
            await asyncio.sleep(0)
            self.text = text
            await self.update(text)
        elif text != self.text:
            self.text = text
            await self.update(text)
        if cancelled:
            self.add_class("-cancelled")
        if interrupted:
            self.add_class("-interrupted")
