"""The first screen says something: a welcome line, a prompt placeholder, and a note when
the model is the tiny offline one (issue 12, item 8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec.structs import replace

from engine import events as ev
from engine.config import config_candidates, parse_config
from engine.model.backend import Backend
from engine.model.local.runner import LocalSettings
from tests.tui.conftest import app_for, settle
from tests.tui.test_terminal_safety import screen_text
from tui.app import TroveApp
from tui.widgets.prompt_input import PromptInput
from tui.widgets.welcome import TinyModelNote, Welcome, home_label

SIZE = (100, 32)
GGUF = "SmolLM2-135M-Instruct-Q8_0.gguf"


def flat(pilot: Any) -> str:
    return " ".join(screen_text(pilot).split())


def offline_app(home: Path, server: Any, *, provider: str = "auto") -> TroveApp:
    """The app as launched with the bundled offline model; its requests go to the scripted
    server (the model is passed in), so no local server is started."""
    config = parse_config({"model": {"provider": provider}}, source="test", env={})
    backend = Backend(
        kind="local",
        label="local · SmolLM2-135M · offline",
        tools_enabled=False,
        max_tokens=512,
        context_window=3584,
        model_name="SmolLM2-135M-Instruct",
        config=config,
        local=LocalSettings(model_path=Path(GGUF), threads=1, context=4096, max_tokens=512),
    )
    return app_for(config, home, server, backend=backend)


async def test_a_new_thread_welcomes_with_model_data_dir_and_keys(app_factory, server):
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        welcome = app.query_one(Welcome)
        thread_dir = str(app.runtime.thread.dir)
        shown = " ".join(welcome.text.split())
        assert "scripted-model" in shown and thread_dir.split("/")[-1] in shown
        assert "Enter sends" in shown and "Esc cancels" in shown and "F1" in shown
        assert "Welcome to Trove" in flat(pilot)
        assert not app.query(TinyModelNote)  # a real endpoint: no offline note
        prompt = app.query_one(PromptInput)
        assert str(prompt.placeholder) == "Message scripted-model — Enter to send, F1 for help"
        assert "Message scripted-model — Enter to send" in flat(pilot)
        assert not [e for e in app.runtime.thread.log.events if "Welcome" in str(e)]


async def test_the_welcome_names_the_config_file_read_or_where_one_goes(tmp_path, server):
    home = tmp_path / "home"
    app = app_for(parse_config(None, source="test", env={}), home, server, config_label=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown = " ".join(app.query_one(Welcome).text.split())
        place = app.chat.settings.config_label
        assert place == home_label(config_candidates(home)[0])  # the platform's config dir
        assert f"No config file (defaults); put one at {place}." in shown
    read = tmp_path / "mine.yaml"
    config = replace(parse_config(None, source="test", env={}), source=read)
    app = app_for(config, home, server, config_label=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert f"Config: {read}." in " ".join(app.query_one(Welcome).text.split())


async def test_a_thread_with_messages_opens_without_the_welcome(app_factory, tmp_path):
    from engine.threads.thread import Thread

    thread = Thread.create(tmp_path / "home", "local", "t-old")
    thread.log.append(ev.UserMessage(text="hello from before"))
    thread.close()
    app = app_factory()
    app.start_thread = "t-old"
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "hello from before" in flat(pilot)
        assert not app.query(Welcome)


async def test_the_tiny_offline_model_says_so_and_how_to_connect_a_real_one(tmp_path, server):
    app = offline_app(tmp_path / "home", server)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        note = " ".join(app.query_one(TinyModelNote).text.split())
        assert "tiny offline model (SmolLM2-135M)" in note
        for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "model.base_url", "model.name"):
            assert key in note
        assert "~/.config/trove/config.yaml" in note
        assert "provider" not in note
        assert "local · SmolLM2-135M · offline" in " ".join(app.query_one(Welcome).text.split())
        placeholder = "Message SmolLM2-135M — Enter to send, F1 for help"
        assert str(app.query_one(PromptInput).placeholder) == placeholder
    forced = offline_app(tmp_path / "home2", server, provider="local")
    async with forced.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "model.provider: local" in forced.query_one(TinyModelNote).text


async def test_a_chosen_local_model_gets_no_tiny_note(tmp_path, server):
    app = offline_app(tmp_path / "home", server)
    config = parse_config(
        {"model": {"provider": "auto"}, "local": {"model_path": "/models/big.gguf"}},
        source="test",
        env={},
    )
    object.__setattr__(app.backend, "config", config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.query(Welcome) and not app.query(TinyModelNote)
