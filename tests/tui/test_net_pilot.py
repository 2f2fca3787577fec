"""Issue 12 items 9-11 (NET lane) through the assembled TUI: the header's window, the retry
notice, /copy's honest answer and the notice after a quit during /compact."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from devtools import scripted_server as s
from engine.config import parse_config
from engine.model.backend import Backend
from tests.support import client_for
from tests.tui.conftest import FROZEN, say, settle
from tui.app import TroveApp
from tui.widgets.title_bar import TitleBar


def _config(server: Any, **model: Any) -> Any:
    data = {
        "base_url": server.base_url,
        "api_key": "k",
        "name": "scripted-model",
        "max_retries": 0,
    }
    data.update(model)
    return parse_config({"model": data}, source="test", env={})


def _offline_backend(config: Any, window: int) -> Backend:
    """What choose_backend gives for the local model: its own window, not model.context_window."""
    return Backend(
        kind="local",
        label="local · SmolLM2-135M · offline",
        tools_enabled=False,
        max_tokens=64,
        context_window=window,
        model_name="SmolLM2-135M-Instruct",
        config=config,
    )


def _app(home: Path, server: Any, config: Any, backend: Backend | None = None) -> TroveApp:
    app = TroveApp(
        config,
        home,
        model=client_for(server),
        clock=lambda: FROZEN,
        new_thread_id="t-net",
        backend=backend,
    )
    app.animation_level = "none"
    return app


async def test_header_divides_by_the_offline_models_window(tmp_path: Path, server: Any) -> None:
    # Item 9: with the 128k default the header showed "context 0%" forever.
    config = _config(server)
    server.script(s.text("word " * 200))
    app = _app(tmp_path / "home", server, config, _offline_backend(config, 1000))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await say(pilot, "tell me something long")
        runtime = app.runtime
        assert runtime is not None
        used = runtime.driver.surface.tokens
        # One figure: the header's and pressure compaction's window are the same.
        assert runtime.compaction.context_window == 1000
        assert app.query_one(TitleBar).context_used == used / 1000
        assert app.query_one(TitleBar).context_used >= 0.1


async def test_the_status_strip_says_retrying_while_a_request_is_retried(
    tmp_path: Path, refused_port: int
) -> None:
    # Item 10: about ten seconds of a plain spinner, with no word of the retries.
    from engine.model import ModelClient
    from tui.widgets.status_strip import StatusStrip

    url = f"http://127.0.0.1:{refused_port}/v1"
    config = parse_config(
        {"model": {"base_url": url, "api_key": "k", "max_retries": 2}}, source="t", env={}
    )
    app = TroveApp(
        config,
        tmp_path / "home",
        model=lambda observer: ModelClient(
            base_url=url, api_key="k", model="m", max_retries=2, observer=observer
        ),
        clock=lambda: FROZEN,
        new_thread_id="t-net",
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        strip = app.query_one(StatusStrip)
        shown: list[str] = []
        original = strip.set_activity

        def spy(text: str, **kw: Any) -> None:
            shown.append(text)
            original(text, **kw)

        strip.set_activity = spy  # type: ignore[method-assign]
        await say(pilot, "hello")
        assert any("retrying (2/3)…" in text for text in shown), shown
        assert any("retrying (3/3)…" in text for text in shown), shown
        assert shown[-1] == ""  # the turn failed: the notice went with it


CAT = shutil.which("cat")


def _fake_tool(bin_dir: Path, name: str, status: int, sink: Path) -> None:
    """A stand-in for a clipboard tool on PATH: a real program that keeps its input."""
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / name
    tool.write_text(f"#!/bin/sh\n{CAT} > '{sink}'\nexit {status}\n", encoding="utf-8")
    tool.chmod(0o755)


async def _copy_answer(app: TroveApp, pilot: Any) -> str:
    from tui.widgets.chat_message import Notice

    await say(pilot, "/copy")
    return str(app.query(Notice).last().render())


async def test_copy_says_where_the_text_went(tmp_path: Path, server: Any, monkeypatch: Any) -> None:
    # Item 11: "Copied 211 characters." when nothing reached a clipboard.
    bin_dir, sink = tmp_path / "bin", tmp_path / "clipboard"
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    server.script(s.text("the answer"))
    app = _app(tmp_path / "home", server, _config(server))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await say(pilot, "question")
        # No tool at all: only OSC 52 went out, and nothing confirms it.
        answer = await _copy_answer(app, pilot)
        assert "terminal's clipboard (OSC 52)" in answer and "may ignore it" in answer
        assert not answer.startswith("Copied")
        assert app.clipboard == "the answer"
        # A tool that fails (xclip with no X server) is not a copy either.
        _fake_tool(bin_dir, "xclip", 1, sink)
        answer = await _copy_answer(app, pilot)
        assert "may ignore it" in answer
        # A tool that took it: that is a copy, and the answer names the tool.
        _fake_tool(bin_dir, "xclip", 0, sink)
        answer = await _copy_answer(app, pilot)
        assert answer == "Copied the last reply to the system clipboard (xclip)."
        assert sink.read_text(encoding="utf-8") == "the answer"


async def test_a_quit_during_compact_leaves_a_notice_after_resume(
    tmp_path: Path, server: Any
) -> None:
    # Item 11: quitting during /compact left no word of it when the thread came back.
    from engine import events as ev
    from tui.widgets.chat_message import Notice

    home = tmp_path / "home"
    config = _config(server)
    server.script(s.text("first answer"), s.text("second answer"), s.text("sum", hold="before"))
    app = _app(home, server, config)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await say(pilot, "first question")
        await say(pilot, "second question")
        await pilot.press(*"/compact", "enter")
        await server.wait_requests(3)
        await pilot.press("ctrl+q")
    server.release()
    resumed = TroveApp(config, home, thread_id="t-net", model=client_for(server))
    async with resumed.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        events = resumed.runtime.thread.log.events  # type: ignore[union-attr]
        assert any(isinstance(e, ev.CompactStart) for e in events)
        notices = [str(n.render()) for n in resumed.query(Notice)]
        said = [n for n in notices if "interrupted" in n]
        assert len(said) == 1, notices
        assert "nothing was lost" in said[0]
        # Said once: the next resume has nothing new to report.
    again = TroveApp(config, home, thread_id="t-net", model=client_for(server))
    async with again.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert not [n for n in again.query(Notice) if "interrupted" in str(n.render())]


def _local_app(home: Path, model_path: Path, client: Any = None) -> TroveApp:
    from engine.model.backend import choose_backend

    config = parse_config(
        {
            "model": {"provider": "local", "max_retries": 0},
            "local": {"model_path": str(model_path)},
        },
        source="t",
        env={},
    )
    app = TroveApp(
        config,
        home,
        model=client,
        clock=lambda: FROZEN,
        new_thread_id="t-local",
        backend=choose_backend(config, {}),
    )
    app.animation_level = "none"
    return app


def _activity(app: TroveApp) -> str:
    from tui.widgets.status_strip import ActivityLine

    return app.query_one(ActivityLine).activity


async def test_the_offline_model_starts_while_input_stays_live(tmp_path: Path) -> None:
    # Item 9: the first message froze input for 1.2-1.5 s while the local server started.
    import asyncio

    import pytest

    from engine import events as ev
    from engine.model.local.child import ChildLocalServer
    from engine.model.local.runner import LocalModelClient, find_bundled_model, xllamacpp_installed
    from tests.tui.conftest import type_text, until
    from tui.widgets.prompt_input import PromptInput

    bundled = find_bundled_model()
    if bundled is None or not xllamacpp_installed():
        pytest.skip("the local extra or its bundled model is not installed")
    gate = asyncio.Event()

    class HeldStart(ChildLocalServer):
        """The real child-process start, held until the test has typed meanwhile."""

        async def _start(self) -> str:
            await gate.wait()
            return await super()._start()

    app = _local_app(tmp_path / "home", bundled)
    assert app.backend is not None and app.backend.local is not None
    local = app.backend.local
    app.model_override = lambda observer: LocalModelClient(
        HeldStart(local), max_retries=0, observer=observer
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await type_text(pilot, "hello")
        await pilot.press("enter")
        await until(pilot, lambda: "starting the offline model…" in _activity(app))
        await type_text(pilot, "typed meanwhile")
        assert app.query_one(PromptInput).text == "typed meanwhile"  # keystrokes echo
        gate.set()
        await settle(pilot)
        events = app.runtime.thread.log.events  # type: ignore[union-attr]
        assert [e.text for e in events if isinstance(e, ev.UserMessage)] == ["hello"]
        assert [e for e in events if isinstance(e, ev.AssistantMessage)]
        assert "starting" not in _activity(app)
        assert app.query_one(PromptInput).text == "typed meanwhile"


async def test_an_offline_model_that_cannot_start_is_one_line_and_the_prompt_is_kept(
    tmp_path: Path,
) -> None:
    import pytest

    from engine.model.local.runner import xllamacpp_installed
    from tui.widgets.chat_message import Notice
    from tui.widgets.prompt_input import PromptInput

    if not xllamacpp_installed():
        pytest.skip("the local extra is not installed")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"this is not a GGUF file\n")
    app = _local_app(tmp_path / "home", broken)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await say(pilot, "hello offline")
        failed = [str(n.render()) for n in app.query(Notice) if "broken.gguf" in str(n.render())]
        assert len(failed) == 1 and "\n" not in failed[0].strip(), failed
        assert app.query_one(PromptInput).text == "hello offline"
