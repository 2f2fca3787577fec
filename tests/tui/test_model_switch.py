"""/model in the app (issue 28, point 2): the header names the model in use and its context
figure is of that model's window, from the switch on."""

from __future__ import annotations

import pytest

from devtools import scripted_server as s
from devtools.scripted_server import ScriptedServer
from engine.config import parse_config
from engine.model.backend import choose_backend
from tests.tui.conftest import FROZEN, say, settle
from tui.app import TroveApp
from tui.widgets.chat_message import Notice
from tui.widgets.title_bar import TitleBar


async def test_model_switch_changes_the_header_and_the_next_reply(server, tmp_path):
    with ScriptedServer() as other:
        config = parse_config(
            {
                "model": {"max_retries": 0},
                "models": {
                    "small": dict(base_url=server.base_url, name="m-small", context_window=200),
                    "big": {"base_url": other.base_url, "name": "m-big", "context_window": 20000},
                },
            },
            source="test",
            env={},
        )
        backend = choose_backend(config, {})
        app = TroveApp(
            config, tmp_path / "home", backend=backend, clock=lambda: FROZEN, new_thread_id="t-1"
        )
        app.animation_level = "none"
        server.script(s.text("a short answer from the small model"))
        other.script(s.text("from the big one"))
        async with app.run_test(size=(120, 32)) as pilot:
            await settle(pilot)
            bar = app.screen.query_one(TitleBar)
            assert bar.model.startswith("small · m-small")
            await say(pilot, "a question with some words in it")
            small = bar.context_used
            assert small > 0
            await say(pilot, "/model big")
            assert bar.model.startswith("big · m-big")
            assert bar.context_used == pytest.approx(small * 200 / 20000)
            notices = "\n".join(str(n.text) for n in app.screen.query(Notice))
            assert "Now using big · m-big" in notices
            await say(pilot, "and now?")
            assert [r["model"] for r in other.requests] == ["m-big"]
            assert len(server.requests) == 1
