"""A resumed thread's code: drawn plain at first, highlighted once its lexer is built off the loop.

Pygments builds its Python lexer (about 45 ms) the first time one is made,
and on a resumed thread the first frame was where that happened: the user
waited for colours before the prompt was ready (issue 11, resume 10k). The
app now draws such a block plain, builds the lexer in a worker thread after
its first frames, then draws the block again, highlighted. The build is held
on an event here, so each state is seen for sure, whatever the machine's speed.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from engine import events as ev
from engine.threads.thread import Thread
from tests.tui.conftest import LIMIT, app_for, make_app, until
from tui import code_lexers
from tui.widgets.chat_message import PastReply

REPLY = "Here it is:\n\n```python\ndef grow(x):\n    return x + 1\n```\n"


def resumed_thread(home: Path) -> None:
    thread = Thread.create(home, "local", "t-code")
    thread.log.append(ev.UserMessage(text="show me a function"))
    thread.log.append(ev.AssistantMessage(content=REPLY, tool_calls=[]))
    thread.close()


def code_colours(reply: PastReply) -> set[Any]:
    """The foreground colours of the drawn line holding the function's name."""
    lines = reply._reply_lines(reply.size.width) or []
    line = next(strip for strip in lines if "grow" in strip.text)
    return {seg.style.color for seg in line if seg.text.strip() and seg.style is not None}


async def test_resumed_code_is_plain_until_its_lexer_is_built_off_the_loop_then_highlighted(
    tmp_path: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code_lexers, "_built", {"text"})  # as in a fresh process
    monkeypatch.setattr(code_lexers, "_wanted", set())
    gate = threading.Event()
    on_main_thread: list[bool] = []
    build = code_lexers.build_wanted

    def held_build() -> None:
        on_main_thread.append(threading.current_thread() is threading.main_thread())
        assert gate.wait(LIMIT)
        build()

    monkeypatch.setattr(code_lexers, "build_wanted", held_build)
    home = tmp_path / "home"
    resumed_thread(home)
    config = make_app(home, server).config
    app = app_for(config, home, server, thread_id="t-code")
    async with app.run_test(size=(100, 32)) as pilot:

        def drawn() -> PastReply | None:
            replies = list(app.chat.query(PastReply))
            if replies and replies[0].size.width and replies[0]._drawn_lines is not None:
                return replies[0]
            return None

        await until(pilot, lambda: drawn() is not None and bool(on_main_thread))
        reply = drawn()
        assert reply is not None and reply.plain_code
        assert len(code_colours(reply)) == 1  # one colour: no lexer ran on the loop
        assert on_main_thread == [False]
        before = code_lexers.generation
        gate.set()
        await until(pilot, lambda: code_lexers.generation > before and not reply.plain_code)
        assert len(code_colours(reply)) > 1  # `def`, the name, `return` … in their colours
        assert "python" in code_lexers._built


def test_two_threads_asking_for_the_same_lexer_build_it_once() -> None:
    names = ["ini", "toml"]
    for name in names:
        code_lexers._built.discard(name)
    before = code_lexers.builds
    threads = [threading.Thread(target=code_lexers.build, args=(names,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert code_lexers.builds - before == len(names)
    assert all(code_lexers.built(name) for name in names)
