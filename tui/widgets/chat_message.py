"""One widget per message in the transcript.

Assistant replies stream through Textual's MarkdownStream, which merges
fragments that arrive faster than they can be rendered, so a fast model
never builds a backlog and the document is never re-rendered per token.
"""

from __future__ import annotations

import asyncio

from textual.content import Content
from textual.widgets import Markdown, Static
from textual.widgets._markdown import MarkdownStream


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage {
        background: $boost;
        border-left: outer $primary;
        padding: 0 1;
        margin: 1 0 0 0;
    }
    UserMessage.-steer { border-left: outer $warning; }
    UserMessage.-injected { border-left: outer $secondary; color: $text-muted; }
    """

    def __init__(self, text: str, *, seq: int, label: str = "") -> None:
        body = Content(text)
        if label:
            body = Content.assemble((label + " ", "$text-muted italic"), body)
        super().__init__(body)
        self.text = text
        self.seq = seq


class AssistantMessage(Markdown):
    DEFAULT_CSS = """
    AssistantMessage {
        margin: 1 0 0 0;
        padding: 0 1;
        background: transparent;
    }
    AssistantMessage.-cancelled { border-left: outer $warning; }
    """

    def __init__(self, text: str = "", *, seq: int | None = None) -> None:
        super().__init__(text)
        self.seq = seq
        self.text = text
        self._stream: MarkdownStream | None = None
        self._pending: list[str] = []
        self._wake = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None

    def write(self, fragment: str) -> None:
        """Called per delta from the engine; returns at once, never awaits rendering."""
        self.text += fragment
        self._pending.append(fragment)
        self._wake.set()
        if self._pump is None:
            self._stream = Markdown.get_stream(self)
            self._pump = asyncio.create_task(self._run())

    async def _run(self) -> None:
        assert self._stream is not None
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                chunk = "".join(self._pending)
                self._pending.clear()
                await self._stream.write(chunk)
        except asyncio.CancelledError:
            rest = "".join(self._pending)
            self._pending.clear()
            if rest:
                await self._stream.write(rest)
            await self._stream.stop()

    async def finish(self, text: str, *, cancelled: bool = False) -> None:
        """The final text from the log wins over whatever the stream showed."""
        if self._pump is not None:
            self._pump.cancel()
            await asyncio.gather(self._pump, return_exceptions=True)
            self._pump = None
        if text != self.text:
            self.text = text
            await self.update(text)
        if cancelled:
            self.add_class("-cancelled")


class PastReply(Static):
    """A reply replayed from the log: one widget, rendered once.

    A Markdown widget builds a child per block, which is right for the reply
    being streamed but costs hundreds of KB per message when a long thread is
    scrolled back; a finished reply only needs to be drawn.
    """

    DEFAULT_CSS = """
    PastReply {
        margin: 1 0 0 0;
        padding: 0 1;
    }
    PastReply.-cancelled { border-left: outer $warning; }
    """

    def __init__(self, text: str, *, seq: int | None = None) -> None:
        from rich.markdown import Markdown as RichMarkdown

        super().__init__(RichMarkdown(text))
        self.text = text
        self.seq = seq


class Notice(Static):
    """Something the app says, not chat: results, errors, hints."""

    DEFAULT_CSS = """
    Notice {
        margin: 1 0 0 0;
        padding: 0 1;
        color: $text-muted;
    }
    Notice.-error { color: $text-error; background: $error-muted; }
    Notice.-warning { color: $text-warning; background: $warning-muted; }
    Notice.-success { color: $text-success; }
    """

    def __init__(self, text: str, *, variant: str = "") -> None:
        super().__init__(Content(text))
        self.text = text
        if variant:
            self.add_class(f"-{variant}")
