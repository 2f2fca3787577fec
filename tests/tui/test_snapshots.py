"""Snapshots of every screen a user sees (review each SVG as a PNG before accepting)."""

from __future__ import annotations

from typing import Any

from devtools import scripted_server as s
from engine import events as ev
from tests.tui.conftest import say, settle, type_text, until

SIZE = (100, 32)


def test_empty_app(snap_compare, app_factory):
    """A new thread: the title bar (thread t-snapshot, scripted-model, context 0%), the
    welcome line (model, "~/home/users/local/threads/t-snapshot", Enter / Esc / F1), the
    focused prompt with its placeholder "Message scripted-model — Enter to send, F1 for help"
    at the bottom and the footer's keys."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)

    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=run_before)


def test_first_run_without_a_model(snap_compare, app_factory):
    """No model configured: a bordered first-run panel saying how to set one up (an OpenAI
    key, another server with its config.yaml snippet, the offline model), with the config
    file's path; the prompt below still works."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)

    assert snap_compare(app_factory(configured=False), terminal_size=SIZE, run_before=run_before)


def test_conversation_with_a_checkpoint(snap_compare, app_factory, server):
    """Two exchanges (the first reply with **France** in bold), then a bordered checkpoint
    "4 messages compacted — archived as batch 1" with its summary, the green "Compacted 4
    messages ..." notice, and the exchange about Lyon after it."""
    server.script(
        s.text("Paris is the capital of **France**."),
        s.text("It has about 2.1 million inhabitants."),
        s.text("The user asked about Paris: capital of France, ~2.1M people."),
        s.text("Lyon is the third largest city."),
    )

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await say(pilot, "What is the capital of France?")
        await say(pilot, "How many people live there?")
        await say(pilot, "/compact")
        await say(pilot, "And Lyon?")

    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare, app_factory):
    """/help opens a dialog over the dimmed app listing every command with its summary,
    then the keys and what they do."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await say(pilot, "/help")

    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=run_before)


def test_slash_completion_open(snap_compare, app_factory):
    """Typing "/c" opens a menu above the prompt with /clear (highlighted), /compact and
    /copy, each with its summary."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await type_text(pilot, "/c")
        await pilot.pause()

    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=run_before)


def test_compaction_in_flight_with_queued_prompt_and_injection(snap_compare, app_factory, server):
    """The seed's terminal scenario, frozen while the summary is held: both exchanges, the
    injected context (labelled "context"), the "compacting — Esc cancels; you can keep
    typing" indicator, "1. [queued] typed while compacting" above an empty prompt, and Tab
    Queue and Esc Cancel in the footer."""
    server.script(s.text("first answer"), s.text("second answer"), s.text("summary", hold="before"))

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await say(pilot, "first question")
        await say(pilot, "second question")
        await type_text(pilot, "/compact")
        await pilot.press("enter")
        await server.wait_requests(3)
        await type_text(pilot, "typed while compacting")
        await pilot.press("enter")
        pilot.app.runtime.driver.inject("context injected meanwhile")
        await pilot.pause()

    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=run_before)


def test_busy_error_notice(snap_compare, app_factory, server):
    """/compact while a compaction is open in the log: a red notice "compaction is busy:
    ... nothing was written" under the two exchanges, and the compacting indicator."""
    server.script(s.text("one"), s.text("two"))

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await say(pilot, "one")
        await say(pilot, "two")
        log = pilot.app.runtime.thread.log
        log.append(ev.CompactStart(turn=None, seqs=[], tokens=0))  # a live orphan
        await say(pilot, "/compact")

    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=run_before)


def test_narrow_terminal(snap_compare, app_factory, server):
    """60 columns: the title bar fits on one line and the whole reply wraps word by word,
    its last word ("word.") on the second line."""
    server.script(s.text("A reply that has to wrap on a narrow terminal, word by word."))

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await say(pilot, "a question on a narrow screen")

    assert snap_compare(app_factory(), terminal_size=(60, 24), run_before=run_before)


def test_help_screen_keys(snap_compare, app_factory):
    """F1 on a tall terminal, scrolled to its end: the keys by where they work, from the
    prompt's (Ctrl+S / Alt+Enter / Ctrl+Enter steer wrapping in the key column) through the
    queue, the transcript (scrolling), a block's Enter, the inspector and each of its tabs
    (what Enter does there), to the dialogs' and this help's own; long descriptions wrap
    under their own column."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("f1")
        await pilot.pause()
        pilot.app.screen.query_one("VerticalScroll").scroll_end(animate=False)
        await pilot.pause()

    assert snap_compare(app_factory(), terminal_size=(100, 60), run_before=run_before)


def test_steer_in_the_queue_strip(snap_compare, app_factory, server):
    """A turn that ran a tool waits on its next request; below the transcript the strip says
    "replying (turn 1) — Esc cancels" and lists "1. [steer] mention the tool result", with
    "[steer]" in the warning colour; the prompt is empty again."""
    from engine.model.tools import ToolBox
    from tests.support import echo_tool

    server.script(
        s.tool_calls([("echo", {"text": "x"})]), s.text("done", hold="before"), s.text("ok")
    )

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.runtime.driver.tools = ToolBox([echo_tool()])
        await type_text(pilot, "start")
        await pilot.press("enter")
        await server.wait_requests(2)
        await type_text(pilot, "mention the tool result")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: bool(pilot.app.runtime.driver.inbox))
        await pilot.pause()

    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=run_before)


def test_a_long_thread_resumed_then_scrolled_to_the_top(snap_compare, app_factory, tmp_path):
    """A resumed thread of 200 exchanges, scrolled up to the top of what is loaded: the
    one-line bold row "▲ 251 earlier events — click to load" above the oldest loaded
    reply ("Answer 125: **nothing** yet."), questions with their left border and replies
    alternating below, the scrollbar at the top; the context gauge is red at 110 % (the
    400 messages are more than the scripted model's window)."""
    from engine.threads.thread import Thread

    thread = Thread.create(tmp_path / "home", "local", "t-long")
    for n in range(200):
        thread.log.append(ev.UserMessage(text=f"Question {n}: what changed?"))
        thread.log.append(ev.AssistantMessage(content=f"Answer {n}: **nothing** yet."))
    thread.close()
    app = app_factory()
    app.start_thread = "t-long"

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        app.query_one("Transcript").scroll_home(animate=False)
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_queued_prompt_being_edited(snap_compare, app_factory, server):
    """A reply is running; the queue strip lists "1. [editing] second thought" (in the
    warning colour) and "2. [queued] third"; the prompt holds "second thought" to edit."""
    server.script(s.text("slow", hold="before"))

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        for text in ("first", "second thought", "third"):
            await type_text(pilot, text)
            await pilot.press("enter")
            if text == "first":
                await server.wait_requests(1)
        await until(pilot, lambda: len(pilot.app.runtime.driver.inbox) == 2)
        await pilot.press("tab", "e")
        await until(pilot, lambda: pilot.app.runtime.driver.inbox[0].held)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=run_before)
