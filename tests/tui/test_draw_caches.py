"""What the prompt and a finished reply keep between draws, and that it never goes stale.

The prompt takes its theme's styles from CSS once per restyle, not once per
draw; a finished reply is rendered once per width and style, for both the
layout's measure and the drawing. Each cache is checked against what the
uncached path gives after whatever can change it (focus, theme, width).
"""

from __future__ import annotations

import dataclasses

from rich.markdown import Markdown as RichMarkdown
from textual._text_area_theme import TextAreaTheme
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import Input

from tui.widgets.chat_message import PastReply
from tui.widgets.prompt_input import PromptInput

REPLY = "# Title\n\nA paragraph that wraps " + "word " * 60 + "\n\n- one\n- two\n\n```\ncode\n```\n"


class _Prompted(App[None]):
    def compose(self) -> ComposeResult:
        yield PromptInput()
        yield Input()


def _theme_styles(prompt: PromptInput) -> dict[str, object]:
    theme = prompt._theme
    assert theme is not None
    return {f.name: getattr(theme, f.name) for f in dataclasses.fields(theme) if f.init}


def _fresh_theme_styles(prompt: PromptInput) -> dict[str, object]:
    """What TextArea itself would fill in now (on a copy: the widget's theme is untouched)."""
    builtin = TextAreaTheme.get_builtin_theme(prompt.theme)
    assert builtin is not None
    copy = dataclasses.replace(builtin)
    copy.apply_css(prompt)
    return {f.name: getattr(copy, f.name) for f in dataclasses.fields(copy) if f.init}


def _draw(widget) -> list[str]:
    width, height = widget.outer_size
    return [line.text for line in widget.render_lines(Region(0, 0, width, height))]


async def test_the_prompt_takes_css_once_per_restyle_and_follows_focus_and_theme(monkeypatch):
    app = _Prompted()
    async with app.run_test() as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.pause()
        theme_class = type(prompt._theme)
        calls = []
        original = theme_class.apply_css
        monkeypatch.setattr(
            theme_class, "apply_css", lambda self, ta: (calls.append(ta), original(self, ta))[1]
        )
        for _ in range(5):
            prompt.refresh()
            _draw(prompt)
        assert len(calls) <= 1  # at most once, whatever the 5 draws
        calls.clear()
        for ch in "hello":
            await pilot.press(ch)
        await pilot.pause()
        assert prompt.text == "hello" and calls == []  # typing does not restyle
        assert _theme_styles(prompt) == _fresh_theme_styles(prompt)

        app.query_one(Input).focus()  # :focus goes: the border and cursor styles change
        await pilot.pause()
        _draw(prompt)
        assert calls  # restyled: taken again (once per restyle the app drew)
        assert _theme_styles(prompt) == _fresh_theme_styles(prompt)

        app.theme = "textual-light"
        await pilot.pause()
        _draw(prompt)
        assert _theme_styles(prompt) == _fresh_theme_styles(prompt)
        assert prompt._theme.base_style.bgcolor == _fresh_theme_styles(prompt)["base_style"].bgcolor


class _Replies(App[None]):
    def compose(self) -> ComposeResult:
        yield PastReply(REPLY)


async def test_a_finished_reply_is_rendered_once_for_measure_and_draw(monkeypatch):
    renders = []
    original = RichMarkdown.__rich_console__

    def counted(self, console, options):
        renders.append(options.max_width)
        return original(self, console, options)

    monkeypatch.setattr(RichMarkdown, "__rich_console__", counted)
    app = _Replies()
    async with app.run_test(size=(80, 40)) as pilot:
        await pilot.pause()
        reply = app.query_one(PastReply)
        drawn = _draw(reply)
        assert len(renders) == 1  # the layout's measure and the drawing share one render
        assert "A paragraph that wraps word" in " ".join(drawn)
        assert reply.size.height == len(reply._reply_lines(reply.size.width) or [])

        renders.clear()
        await pilot.resize_terminal(50, 40)
        await pilot.pause()
        narrow = _draw(reply)
        assert len(renders) == 1 and max(len(line.rstrip()) for line in narrow) <= 50
        assert reply.size.height > len(drawn)  # it wraps into more lines

        reply.update(RichMarkdown("just this"))  # new content: rendered again
        await pilot.pause()
        assert "just this" in " ".join(_draw(reply))


async def test_a_finished_reply_draws_as_textual_draws_it(monkeypatch):
    """The cached lines are the lines Textual's own path renders (a dark and a light theme)."""
    app = _Replies()
    async with app.run_test(size=(80, 40)) as pilot:
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            await pilot.pause()
            reply = app.query_one(PastReply)
            width, height = reply.outer_size
            ours = reply.render_lines(Region(0, 0, width, height))
            monkeypatch.setattr(PastReply, "_reply_lines", lambda self, width: None)
            reply.refresh()
            theirs = reply.render_lines(Region(0, 0, width, height))
            monkeypatch.undo()
            reply.refresh()
            assert [list(s) for s in ours] == [list(s) for s in theirs]
