"""Rich's Markdown for replayed replies: a code block waits plain for its lexer.

While the app defers (tui.code_lexers), a block whose Pygments lexer is not
built yet is drawn as plain text in the same box, so the same lines and the
layout does not move; it is highlighted once the lexer is built off the loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.markdown import CodeBlock, MarkdownElement
from rich.markdown import Markdown as RichMarkdown
from rich.syntax import Syntax

from tui import code_lexers

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult


class _WaitingCodeBlock(CodeBlock):
    """Rich's code block, plain while its lexer waits to be built off the loop."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not code_lexers.waits_for(self.lexer_name):
            yield from super().__rich_console__(console, options)
            return
        code = str(self.text).rstrip()
        yield Syntax(code, "text", theme=self.theme, word_wrap=True, padding=1)


class ReplayedMarkdown(RichMarkdown):
    """Rich's Markdown whose fenced and indented code blocks may wait for their lexer."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **RichMarkdown.elements,
        "fence": _WaitingCodeBlock,
        "code_block": _WaitingCodeBlock,
    }
