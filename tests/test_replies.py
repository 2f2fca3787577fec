"""Issue 28, point 3 in the engine: /retry, /edit, /system and /copy's choice of text."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from devtools import scripted_server as s
from engine import events as ev
from engine.config import parse_config
from engine.runtime import Runtime
from engine.runtime.commands import CommandError
from engine.runtime.commands_replies import choose_copy, code_blocks
from engine.runtime.rewind import RewindPoint, RewindRefused, last_point, points, resend
from engine.runtime.system_prompt import SYSTEM_PROMPT
from engine.workspace.fork import fork_thread
from tests.support import chat_messages, client_for, first_delta, of_kind, opened


def config(server):
    return parse_config(
        {"model": {"base_url": server.base_url, "api_key": "k", "max_retries": 0}},
        source="test",
        env={},
    )


def runtime(tmp_path: Path, server, thread_id: str | None = None, front=None) -> Runtime:
    return opened(
        Runtime.open(
            config(server), tmp_path, thread_id=thread_id, model=client_for(server), front_end=front
        )
    )


async def chat(rt: Runtime, *prompts: str) -> None:
    for prompt in prompts:
        rt.driver.send(prompt)
        await asyncio.wait_for(rt.driver.when_idle(), 30)


async def run(rt: Runtime, line: str) -> str:
    result = await rt.commands.run(line)
    assert result.ok, result.text
    await asyncio.wait_for(rt.driver.when_idle(), 30)
    return result.text


def said(rt: Runtime) -> list[tuple[str, str]]:
    """The conversation on the thread's line, as the model is sent it."""
    return [(e.role, e.message.get("content") or "") for e in rt.driver.surface.entries]


def replies_in_file(rt: Runtime) -> list[str]:
    return [e.content or "" for e in of_kind(rt.thread.log.file_events, ev.AssistantMessage)]


# -- /retry ------------------------------------------------------------------------------


async def test_retry_answers_the_last_prompt_again_and_keeps_the_earlier_reply(tmp_path, server):
    server.script(s.text("first answer"), s.text("second answer"), s.text("the retry"))
    rt = runtime(tmp_path, server)
    await chat(rt, "one", "two")
    text = await run(rt, "/retry")
    assert "earlier reply stays in the log as a branch" in text
    assert said(rt) == [
        ("user", "one"),
        ("assistant", "first answer"),
        ("user", "two"),
        ("assistant", "the retry"),
    ]
    # The model was asked with the prompt once, and without the reply it replaces.
    assert [m["content"] for m in chat_messages(server.requests[-1])] == [
        "one",
        "first answer",
        "two",
    ]
    assert replies_in_file(rt) == ["first answer", "second answer", "the retry"]
    retry = of_kind(rt.thread.log.events, ev.SessionRewind)[-1]
    assert retry.retry and retry.undoes is None
    turns = [e.turn for e in of_kind(rt.thread.log.file_events, ev.TurnStart)]
    assert len(turns) == len(set(turns)) == 3
    assert [p.text for p in points(rt.thread.log)] == ["two", "one"]  # no prompt added

    # Again: each earlier reply stays in the file; the line has the newest.
    server.script(s.text("a third try"))
    await run(rt, "/retry")
    assert said(rt)[-1] == ("assistant", "a third try")
    assert replies_in_file(rt)[-3:] == ["second answer", "the retry", "a third try"]
    # And the thread goes on from the new reply.
    server.script(s.text("fine"))
    await chat(rt, "three")
    assert [c for _, c in said(rt)][-3:] == ["a third try", "three", "fine"]


async def test_a_retry_that_fails_puts_the_earlier_reply_back(tmp_path, server):
    server.script(s.text("kept answer"), s.error(500, "the server broke"))
    rt = runtime(tmp_path, server)
    await chat(rt, "question")
    await run(rt, "/retry")
    assert said(rt) == [("user", "question"), ("assistant", "kept answer")]
    undo = of_kind(rt.thread.log.events, ev.SessionRewind)[-1]
    retry = of_kind(rt.thread.log.file_events, ev.SessionRewind)[0]
    assert undo.undoes == retry.seq and undo.after == retry.seq - 1
    assert rt.driver.inbox == []
    # The next prompt goes on from the earlier reply.
    server.script(s.text("next"))
    await chat(rt, "more")
    assert [m["content"] for m in chat_messages(server.requests[-1])] == [
        "question",
        "kept answer",
        "more",
    ]


async def test_cancelling_a_retry_puts_the_earlier_reply_back(tmp_path, server):
    server.script(s.text("kept answer"), s.text("a partial retry", hold=True))
    rt = runtime(tmp_path, server)
    await chat(rt, "question")
    result = await rt.commands.run("/retry")
    assert result.ok
    await first_delta(rt.driver)
    assert said(rt) == [("user", "question")]  # the retry's branch, while it runs
    rt.driver.cancel()
    await asyncio.wait_for(rt.driver.when_idle(), 30)
    server.release()
    assert said(rt) == [("user", "question"), ("assistant", "kept answer")]
    # What the retry streamed is kept too, marked, on its own branch.
    partial = of_kind(rt.thread.log.file_events, ev.AssistantMessage)[-1]
    assert partial.cancelled and "a partial retry".startswith(partial.content)


async def test_retry_while_a_reply_streams_stops_it_and_answers_again(tmp_path, server):
    server.script(s.text("stopped half", hold=True), s.text("a whole answer"))
    rt = runtime(tmp_path, server)
    rt.driver.send("question")
    await first_delta(rt.driver)
    text = await run(rt, "/retry")
    server.release()
    assert text.startswith("Stopped the reply; answering the last prompt again")
    assert said(rt) == [("user", "question"), ("assistant", "a whole answer")]
    stopped = of_kind(rt.thread.log.file_events, ev.AssistantMessage)[0]
    assert stopped.cancelled and "stopped half".startswith(stopped.content)


async def test_steering_sent_into_a_failed_retry_comes_back_queued(tmp_path, server):
    """What the user typed while a retry ran is not lost with its branch: a steer it took
    and a prompt queued behind it are queued again, with their ids, here and on reopen."""
    server.script(s.text("kept answer"), s.text("draft", hold=True), s.error(500, "broke"))
    rt = runtime(tmp_path, server)
    await chat(rt, "question")
    assert (await rt.commands.run("/retry")).ok
    await first_delta(rt.driver)
    steer = rt.driver.send("and mention pong", placement="next-step")
    queued = rt.driver.send("a follow-up", waking=False)
    server.release()
    await asyncio.wait_for(rt.driver.when_idle(), 30)
    assert len(server.requests) == 3  # the steer was taken: it reached the model
    assert said(rt) == [("user", "question"), ("assistant", "kept answer")]
    assert [(i.id, i.text) for i in rt.driver.inbox] == [
        (steer, "and mention pong"),
        (queued, "a follow-up"),
    ]
    thread_id = rt.thread.id
    await rt.aclose()
    again = runtime(tmp_path, server, thread_id)
    assert [(i.id, i.text) for i in again.driver.inbox] == [
        (steer, "and mention pong"),
        (queued, "a follow-up"),
    ]
    assert said(again) == [("user", "question"), ("assistant", "kept answer")]


async def test_retry_is_refused_in_one_line_when_it_cannot_happen(tmp_path, server):
    rt = runtime(tmp_path, server)
    result = await rt.commands.run("/retry")
    assert not result.ok and result.text == "nothing to retry yet: this thread has no prompt"
    server.script(s.text("answer"))
    await chat(rt, "question")
    rt.driver.send("waiting", waking=False)
    result = await rt.commands.run("/retry")
    assert not result.ok and "while a prompt is queued" in result.text
    assert "\n" not in result.text


async def test_retry_of_a_prompt_the_model_never_answered_says_to_send_it_again(tmp_path, server):
    server.script(s.error(401, "bad key"))
    rt = runtime(tmp_path, server)
    await chat(rt, "question")
    result = await rt.commands.run("/retry")
    assert not result.ok and "send it again" in result.text


# -- /edit -------------------------------------------------------------------------------


class EditingFront:
    """A front end with an input line: /edit puts the prompt there."""

    def __init__(self) -> None:
        self.editing: list[RewindPoint] = []

    def open_thread(self, thread_id: str | None) -> None: ...

    def quit(self) -> None: ...

    def actions(self):
        return ()

    def edit_prompt(self, point: RewindPoint) -> str:
        self.editing.append(point)
        return "in the input"


async def test_edit_opens_the_last_prompt_and_sending_replaces_the_exchange(tmp_path, server):
    server.script(s.text("answer one"), s.text("answer two"), s.text("answer to the edit"))
    front = EditingFront()
    rt = runtime(tmp_path, server, front=front)
    await chat(rt, "one", "two")
    assert await run(rt, "/edit") == "in the input"
    (point,) = front.editing
    assert point.text == "two"
    assert said(rt)[-1] == ("assistant", "answer two")  # nothing changes until it is sent
    resend(rt.driver, rt.thread.log, point.turn, "two, edited")
    await asyncio.wait_for(rt.driver.when_idle(), 30)
    assert [c for _, c in said(rt)] == ["one", "answer one", "two, edited", "answer to the edit"]
    # The replaced exchange is a branch, listed by /rewind as such.
    listed = points(rt.thread.log)
    assert [(p.text, p.on_line) for p in listed] == [
        ("two, edited", True),
        ("two", False),
        ("one", True),
    ]


async def test_an_edited_prompt_edited_again_goes_back_to_the_same_place(tmp_path, server):
    """The edited prompt is queued by the /edit's own line (one line: nothing typed is lost
    to a kill); going back before it steps over that line, as over an `inbox/queued`."""
    server.script(s.text("answer one"), s.text("answer two"), s.text("first edit's"))
    front = EditingFront()
    rt = runtime(tmp_path, server, front=front)
    await chat(rt, "one", "two")
    await run(rt, "/edit")
    resend(rt.driver, rt.thread.log, front.editing[-1].turn, "two, edited")
    await asyncio.wait_for(rt.driver.when_idle(), 30)
    assert not of_kind(rt.thread.log.file_events, ev.InboxQueued)[2:]  # only one and two
    await run(rt, "/edit")
    again = front.editing[-1]
    assert again.text == "two, edited"
    assert again.after == front.editing[0].after
    resend(rt.driver, rt.thread.log, again.turn, "two, edited twice")
    await asyncio.wait_for(rt.driver.when_idle(), 30)
    assert [c for _, c in said(rt)][:3] == ["one", "answer one", "two, edited twice"]
    assert [e.item_id for e in of_kind(rt.thread.log.events, ev.UserMessage)][1:] == [
        of_kind(rt.thread.log.file_events, ev.SessionRewind)[-1].seq
    ]


async def test_an_edit_sent_after_the_thread_moved_on_is_refused(tmp_path, server):
    server.script(s.text("answer one"), s.text("answer two"))
    front = EditingFront()
    rt = runtime(tmp_path, server, front=front)
    await chat(rt, "one")
    await run(rt, "/edit")
    await chat(rt, "two")  # sent meanwhile, e.g. from another line
    with pytest.raises(RewindRefused, match="no longer the one /edit opened"):
        resend(rt.driver, rt.thread.log, front.editing[0].turn, "one, edited")
    assert [c for _, c in said(rt)] == ["one", "answer one", "two", "answer two"]


async def test_edit_with_no_input_line_refuses_in_one_line(tmp_path, server):
    server.script(s.text("answer"))
    rt = runtime(tmp_path, server)  # as `trove -p` builds it: no front end
    await chat(rt, "question")
    result = await rt.commands.run("/edit")
    assert not result.ok and result.text.startswith("/edit needs an input line")
    assert "\n" not in result.text


async def test_last_point_is_the_newest_prompt_on_the_line(tmp_path, server):
    server.script(s.text("a"), s.text("b"))
    rt = runtime(tmp_path, server)
    assert last_point(rt.thread.log) is None
    await chat(rt, "one", "two")
    point = last_point(rt.thread.log)
    assert point is not None and point.text == "two"
    assert point.after == points(rt.thread.log)[0].after


# -- /system -----------------------------------------------------------------------------


def system_sent(server) -> str | None:
    first = server.requests[-1]["messages"][0]
    return first["content"] if first["role"] == "system" else None


async def test_system_shows_sets_and_resets_the_system_prompt(tmp_path, server):
    rt = runtime(tmp_path, server)
    shown = await run(rt, "/system")
    assert "the default" in shown and SYSTEM_PROMPT in shown
    assert (await rt.commands.run("/system Answer like a pirate.")).ok
    server.script(s.text("arr"))
    await chat(rt, "hello")
    assert system_sent(server).startswith("Answer like a pirate.")
    assert "Answer like a pirate." in await run(rt, "/system")
    log = rt.thread.log
    # Set before the first message: written ahead of it, once the thread exists.
    assert [e.text for e in of_kind(log.events, ev.SessionSystem)] == ["Answer like a pirate."]
    thread_id = rt.thread.id
    await rt.aclose()

    rt = runtime(tmp_path, server, thread_id)  # it holds when the thread opens again
    server.script(s.text("still arr"))
    await chat(rt, "again")
    assert system_sent(server).startswith("Answer like a pirate.")
    reset = await run(rt, "/system --reset")
    assert reset == "System prompt back to the default, from the next request on."
    server.script(s.text("plain"))
    await chat(rt, "and now")
    assert system_sent(server).startswith(SYSTEM_PROMPT)
    assert of_kind(rt.thread.log.events, ev.SessionSystem)[-1].text is None


async def test_system_set_after_a_reply_is_what_a_retry_of_it_uses(tmp_path, server):
    """The thread's system prompt holds on every branch: /system, then /retry, is how one
    sees what it changes."""
    server.script(s.text("long answer"), s.text("short"))
    rt = runtime(tmp_path, server)
    await chat(rt, "question")
    await run(rt, "/system Be terse.")
    await run(rt, "/retry")
    assert system_sent(server).startswith("Be terse.")
    assert said(rt)[-1] == ("assistant", "short")
    assert "Be terse." in await run(rt, "/system")


async def test_a_fork_keeps_the_system_prompt(tmp_path, server):
    server.script(s.text("arr"), s.text("arr again"))
    rt = runtime(tmp_path, server)
    await run(rt, "/system Answer like a pirate.")
    await chat(rt, "hello")
    child = fork_thread(tmp_path, "local", rt.thread.id)
    forked = runtime(tmp_path, server, child)
    assert forked.system.custom == "Answer like a pirate."
    await chat(forked, "and here?")
    assert system_sent(server).startswith("Answer like a pirate.")


async def test_system_is_in_the_export(tmp_path, server):
    server.script(s.text("arr"))
    rt = runtime(tmp_path, server)
    await run(rt, "/system Answer like a pirate.")
    await chat(rt, "hello")
    await run(rt, "/export")
    text = (tmp_path / "exports" / f"{rt.thread.id}.md").read_text()
    assert "## System prompt\n\nAnswer like a pirate.\n" in text
    assert text.index("## System prompt") < text.index("## User")


# -- /copy -------------------------------------------------------------------------------


REPLY = """Two ways:

```python
first = 1
```

and, with tildes:

~~~sh
echo second
~~~
"""


async def test_copy_chooses_a_reply_or_a_code_block(tmp_path, server):
    server.script(s.text("older reply"), s.text(REPLY))
    rt = runtime(tmp_path, server)
    log = rt.thread.log
    with pytest.raises(CommandError, match="no reply to copy yet"):
        choose_copy(log, "")
    await chat(rt, "a", "b")
    assert choose_copy(log, "") == (REPLY, "the last reply")
    assert choose_copy(log, "1")[0] == REPLY
    assert choose_copy(log, "2") == ("older reply", "reply 2 from the end")
    assert choose_copy(log, "code")[0] == "echo second"
    assert choose_copy(log, "code 1")[0] == "first = 1"
    assert choose_copy(log, "CODE 2")[0] == "echo second"
    for bad, why in [
        ("3", "no reply 3 from the end"),
        ("code 3", "has 2 code block"),
        ("0", "/copy [N]"),
        ("code x", "/copy [N]"),
        ("two", "/copy [N]"),
    ]:
        with pytest.raises(CommandError, match=re.escape(why)):
            choose_copy(log, bad)


def test_code_blocks_are_read_as_commonmark_reads_them():
    text = (
        "x\n\n````md\n```\ninner\n```\n````\n\n    indented\n\n- item\n\n  ```\n  listed\n  ```\n"
    )
    assert code_blocks(text) == ["```\ninner\n```", "indented", "listed"]


async def test_copy_without_a_front_end_uses_the_system_clipboard(tmp_path, server, monkeypatch):
    """`trove -p /copy`: no terminal to send OSC 52 to, so the system clipboard tool or a
    one-line refusal (here a stand-in pbcopy on PATH records what it was given)."""
    server.script(s.text("copy \x1b[31mme"))
    rt = runtime(tmp_path, server)
    await chat(rt, "a")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    result = await rt.commands.run("/copy")
    assert not result.ok and result.text.startswith("Not copied: no clipboard tool")
    tool = bin_dir / "pbcopy"
    tool.write_text(f"#!/bin/sh\nexec /bin/cat > {tmp_path / 'clip'}\n")
    tool.chmod(0o755)
    result = await rt.commands.run("/copy")
    assert result.ok and result.text == "Copied the last reply to the system clipboard (pbcopy)."
    assert (tmp_path / "clip").read_text() == "copy me"  # made terminal-safe first
