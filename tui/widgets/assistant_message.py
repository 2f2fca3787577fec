"""The reply being streamed: Markdown fed through Textual's MarkdownStream.

MarkdownStream merges fragments that arrive faster than they can be
rendered, so a fast model never builds a backlog and the document is never
re-rendered per token. Imported on the first reply, not at launch. The text
shown (and copied) is the reply made terminal-safe; an escape sequence split
across deltas is held back until it is whole, then dropped.
"""

from __future__ import annotations

import asyncio

from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownStream

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
        self._pending: list[str] = []
        self._wake = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None

    def write(self, fragment: str) -> None:
        """Called per delta from the engine; returns at once, never awaits rendering."""
        fragment = self._safe.feed(fragment)
        if not fragment:
            return
        self.text += fragment
        self._pending.append(fragment)
        self._wake.set()
        if self._pump is None:
            self._stream = Markdown.get_stream(self)
            self._pump = asyncio.create_task(self._run())

    async def _run(self) -> None:
        assert self._stream is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            chunk = "".join(self._pending)
            self._pending.clear()
            await self._stream.write(chunk)

    async def finish(
        self, text: str, *, cancelled: bool = False, interrupted: bool = False
    ) -> None:
        """The final text from the log wins over whatever the stream showed.

        After streaming, the whole text is rendered once more: the pump may be
        cancelled before it ever ran (the reply ended in the same tick as its
        last delta), and stopping a MarkdownStream mid-append can leave an
        append that lands after the stream's last one, showing a stale tail.
        """
        text = safe_text(text)
        pump, self._pump = self._pump, None
        if pump is not None:
            pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)
            if self._stream is not None:
                await self._stream.stop()
                self._stream = None
            self._pending.clear()
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
