"""The surface: a pure function of log events (no I/O here)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine import events as ev
from engine.log import from_dict
from engine.surface import (
    INTERRUPTED_RESULT,
    Surface,
    estimate_tokens,
    tokens_for_chars,
)


class Events:
    """Builds a log in memory, numbering seqs the way SessionLog does."""

    def __init__(self) -> None:
        self.events: list[ev.LogEvent] = []

    def add(self, kind: type[ev.Event], **fields: Any) -> int:
        """The event as a replay reads it from its line (nested objects typed too)."""
        seq = len(self.events) + 1
        line = {"seq": seq, "ts": "2025-01-01T00:00:00.000Z", "kind": ev.kind_of(kind), **fields}
        self.events.append(from_dict(line, path=Path("session.jsonl"), lineno=seq))
        return seq

    def user(self, text: str, **fields: Any) -> int:
        return self.add(ev.UserMessage, text=text, **fields)

    def assistant(self, content: str = "", calls: Sequence[tuple[str, str, str]] = ()) -> int:
        return self.add(
            ev.AssistantMessage,
            content=content,
            tool_calls=[{"id": i, "name": n, "arguments": a} for i, n, a in calls],
            usage={"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        )

    def result(self, call_id: str, content: str, name: str = "echo") -> int:
        return self.add(ev.ToolResult, call_id=call_id, name=name, content=content)

    def compact(self, replaced: list[int], summary: str) -> int:
        """compact/summary then the checkpoint user/message; returns the checkpoint seq."""
        summary_seq = self.add(
            ev.CompactSummary,
            summary=summary,
            first=replaced[0],
            last=replaced[-1],
            replaced=replaced,
        )
        return self.checkpoint(summary_seq, replaced, summary)

    def checkpoint(self, summary_seq: int, replaced: list[int], text: str) -> int:
        return self.user(
            text,
            checkpoint={"summary": summary_seq, "first": replaced[0], "last": replaced[-1]},
        )

    def surface(self) -> Surface:
        return Surface.from_events(self.events)


def _seqs(surface: Surface) -> list[int]:
    return [entry.seq for entry in surface.entries]


def test_user_assistant_and_tool_messages_are_derived() -> None:
    log = Events()
    log.add(ev.InboxQueued, text="what is 2+2?", waking=True, placement="follow-up")
    log.add(ev.TurnStart, turn=1, items=[1])
    log.user("what is 2+2?", item_id=1)
    log.assistant("", calls=[("call_1", "calc", '{"expr": "2+2"}')])
    log.result("call_1", "4", name="calc")
    log.assistant("It is 4.")
    log.add(ev.TurnEnd, turn=1, status="ok")

    surface = log.surface()
    assert surface.messages() == [
        {"role": "user", "content": "what is 2+2?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "calc", "arguments": '{"expr": "2+2"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "4"},
        {"role": "assistant", "content": "It is 4."},
    ]
    assert _seqs(surface) == [3, 4, 5, 6]
    assert [entry.role for entry in surface.entries] == ["user", "assistant", "tool", "assistant"]
    assert all(entry.turn == 1 for entry in surface.entries)
    assert not any(entry.checkpoint for entry in surface.entries)


def test_turn_is_recorded_only_inside_a_turn() -> None:
    log = Events()
    log.add(ev.TurnStart, turn=3)
    log.user("inside")
    log.add(ev.TurnEnd, turn=3, status="ok")
    log.user("injected between turns", source="inject")
    assert [entry.turn for entry in log.surface().entries] == [3, None]


def test_incremental_apply_matches_replay() -> None:
    log = Events()
    log.user("a")
    log.assistant("b", calls=[("c1", "t", "{}")])
    log.user("inject", source="inject")
    log.result("c1", "r")
    log.compact([1, 2], "summary of a and b")
    live = Surface()
    for event in log.events:
        live.apply(event)
    assert live.entries == log.surface().entries
    assert live.messages() == log.surface().messages()


def test_replay_keeps_the_same_books_as_applying_every_event() -> None:
    """`from_events` keeps its bookkeeping in locals: every counter must still come
    out as `apply` of each event leaves it, across turns, seams and checkpoints."""
    log = Events()
    log.add(ev.TurnStart, turn=1, items=[])
    log.user("a")
    log.assistant("b", calls=[("c1", "t", "{}")])
    log.result("c1", "r")
    log.add(ev.TurnEnd, turn=1, status="ok")
    log.user("inject", source="inject")
    log.add(ev.TurnStart, turn=2, items=[])
    log.user("c")
    log.compact([1, 2, 3], "summary of a and b")
    log.assistant("d")
    log.add(ev.EndSeed)
    log.user("e")
    log.compact([5, 7], "scattered")
    log.add(ev.TurnStart, turn=3, items=[])
    log.assistant("f")
    for upto in range(len(log.events) + 1):
        live = Surface()
        for event in log.events[:upto]:
            live.apply(event)
        replayed = Surface.from_events(log.events[:upto])
        assert replayed.entries == live.entries
        books = ("tokens", "version", "reshapes", "newest", "_turn", "_replacements")
        assert [getattr(replayed, b) for b in books] == [getattr(live, b) for b in books]


def test_tool_result_follows_its_call_even_with_an_injection_between() -> None:
    log = Events()
    log.user("go")
    log.assistant("calling", calls=[("c1", "search", '{"q": "x"}'), ("c2", "read", "{}")])
    log.user("by the way, prefer short answers", source="inject")
    log.result("c1", "found x")
    log.result("c2", "page")
    log.assistant("done")

    messages = log.surface().messages()
    assert [(m["role"], m.get("tool_call_id"), m["content"]) for m in messages] == [
        ("user", None, "go"),
        ("assistant", None, "calling"),
        ("tool", "c1", "found x"),
        ("tool", "c2", "page"),
        ("user", None, "by the way, prefer short answers"),
        ("assistant", None, "done"),
    ]


def test_call_without_a_result_gets_the_interrupted_result() -> None:
    log = Events()
    log.user("go")
    log.assistant("", calls=[("c1", "slow", "{}"), ("c2", "fast", "{}")])
    log.result("c2", "ok")
    log.user("next prompt")

    messages = log.surface().messages()
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": INTERRUPTED_RESULT}
    assert messages[3] == {"role": "tool", "tool_call_id": "c2", "content": "ok"}
    assert messages[4] == {"role": "user", "content": "next prompt"}
    assert len(messages) == 5


def test_orphan_tool_results_are_dropped() -> None:
    log = Events()
    log.user("hi")
    log.result("ghost", "a result for a call nobody made")
    log.assistant("hello")
    messages = log.surface().messages()
    assert messages == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


def _three_exchanges() -> Events:
    log = Events()
    for i in (1, 2, 3):
        log.user(f"question {i}")  # seqs 1, 3, 5
        log.assistant(f"answer {i}")  # seqs 2, 4, 6
    return log


def test_checkpoint_replaces_exactly_the_span_at_its_first_entry() -> None:
    log = _three_exchanges()
    summary = log.add(ev.CompactSummary, summary="S", first=1, last=4, replaced=[1, 2, 3, 4])
    checkpoint = log.checkpoint(summary, [1, 2, 3, 4], "[summary] S")

    surface = log.surface()
    assert _seqs(surface) == [checkpoint, 5, 6]
    first = surface.entries[0]
    assert first.checkpoint and first.role == "user"
    assert surface.messages()[0] == {"role": "user", "content": "[summary] S"}
    assert [m["content"] for m in surface.messages()[1:]] == ["question 3", "answer 3"]


def test_checkpoint_in_the_middle_keeps_entries_on_both_sides() -> None:
    log = _three_exchanges()
    checkpoint = log.compact([3, 4], "middle")
    assert _seqs(log.surface()) == [1, 2, checkpoint, 5, 6]


def test_injection_during_compaction_stays_after_the_checkpoint() -> None:
    log = _three_exchanges()
    summary = log.add(ev.CompactSummary, summary="S", first=1, last=4, replaced=[1, 2, 3, 4])
    # Context injected while the summary was being written: lower seq than the
    # checkpoint, not part of the replaced span.
    injected = log.user("remember the deadline is Friday", source="inject")
    checkpoint = log.checkpoint(summary, [1, 2, 3, 4], "[summary] S")
    assert injected < checkpoint

    surface = log.surface()
    assert _seqs(surface) == [checkpoint, 5, 6, injected]
    contents = [m["content"] for m in surface.messages()]
    assert contents == ["[summary] S", "question 3", "answer 3", "remember the deadline is Friday"]


def test_a_second_compaction_can_replace_the_first_checkpoint() -> None:
    log = _three_exchanges()
    first = log.compact([1, 2, 3, 4], "first summary")
    injected = log.user("injected", source="inject")
    question = log.user("question 4")
    answer = log.assistant("answer 4")
    second = log.compact([first, 5, 6], "second summary")

    surface = log.surface()
    assert _seqs(surface) == [second, injected, question, answer]
    assert [entry.checkpoint for entry in surface.entries] == [True, False, False, False]
    assert [m["content"] for m in surface.messages()] == [
        "second summary",
        "injected",
        "question 4",
        "answer 4",
    ]


def test_compacting_a_call_keeps_no_dangling_result() -> None:
    log = Events()
    log.user("go")
    log.assistant("", calls=[("c1", "t", "{}")])
    log.result("c1", "r")
    log.assistant("after")
    checkpoint = log.compact([1, 2, 3], "summary")
    messages = log.surface().messages()
    assert _seqs(log.surface()) == [checkpoint, 4]
    assert all(m["role"] != "tool" for m in messages)


def test_token_estimates_add_up() -> None:
    assert estimate_tokens("") == 4
    assert estimate_tokens("abcd") == 5
    assert estimate_tokens("abcde") == 6
    assert estimate_tokens("x" * 400) == 104
    assert estimate_tokens("abcdefgh") == tokens_for_chars(8)

    log = Events()
    log.user("hello there")
    log.assistant("hi", calls=[("c1", "lookup", '{"k": 1}')])
    log.result("c1", "value")
    log.assistant("a longer answer " * 10)
    surface = log.surface()

    tokens = [entry.tokens for entry in surface.entries]
    assert tokens == [
        estimate_tokens("hello there"),
        tokens_for_chars(len("hi") + len("lookup") + len('{"k": 1}')),
        estimate_tokens("value"),
        estimate_tokens("a longer answer " * 10),
    ]
    assert surface.tokens == sum(tokens)

    before = surface.tokens
    checkpoint_text = "summary"
    log.compact([1, 2, 3], checkpoint_text)
    after = log.surface()
    assert after.tokens == before - sum(tokens[:3]) + estimate_tokens(checkpoint_text)
    assert after.tokens == sum(entry.tokens for entry in after.entries)


def test_running_token_total_and_lazy_messages_match_a_full_rebuild() -> None:
    """The lean index: tokens kept as a running total through appends and checkpoints
    (contiguous or scattered spans), and messages built only when asked, equal to
    what the entries' events say."""
    log = Events()
    for n in range(6):
        log.user(f"question {n} " * (n + 1))
        log.assistant(f"answer {n} " * (n + 2), calls=[(f"c{n}", "echo", f'{{"n": {n}}}')])
        log.result(f"c{n}", f"result {n}")
    surface = log.surface()
    assert surface.tokens == sum(e.tokens for e in surface.entries)
    assert not any(entry._message is not None for entry in surface.entries)  # none built yet
    log.compact([1, 2, 3, 4, 5, 6], "first six")  # one contiguous run: replaced as a slice
    log.compact([10, 11, 12, 16], "scattered")  # not one run: the careful path
    surface = log.surface()
    assert surface.tokens == sum(e.tokens for e in surface.entries)
    assert _seqs(surface) == [20, 7, 8, 9, 22, 13, 14, 15, 17, 18]
    assert surface.reshapes == 2
    messages = surface.messages()
    assert messages[1] == {"role": "user", "content": "question 2 " * 3}
    assert messages[2]["tool_calls"][0]["function"] == {"name": "echo", "arguments": '{"n": 2}'}
    assert messages[3] == {"role": "tool", "tool_call_id": "c2", "content": "result 2"}


def test_a_vouched_checkpoint_lands_as_the_checked_one_does() -> None:
    """The transaction vouches for the run it checked; placement then skips the
    entry-by-entry comparison and ends exactly where the full check would."""
    checked, vouched = Surface(), Surface()
    log = Events()
    for n in range(4):
        log.user(f"q{n}")
        log.assistant(f"a{n}")
    summary = log.add(ev.CompactSummary, replaced=[1, 2, 3, 4], summary="s", tokens=0)
    for event in log.events:
        checked.apply(event)
        vouched.apply(event)
    vouched.vouch(summary, 0, 4, sum(e.tokens for e in vouched.entries[:4]))
    log.add(ev.UserMessage, text="checkpoint", checkpoint=ev.Checkpoint(summary=summary))
    checked.apply(log.events[-1])
    vouched.apply(log.events[-1])
    assert vouched.entries == checked.entries
    assert (vouched.tokens, vouched.reshapes, vouched.newest) == (
        checked.tokens,
        checked.reshapes,
        checked.newest,
    )


def test_a_stale_or_foreign_vouch_is_not_trusted() -> None:
    """A vouch names its summary and the surface version: a checkpoint of another
    summary, a change in between, or a run that does not match sends placement back
    to the full comparison (here every vouch carries a wrong price, which would show)."""
    log = Events()
    for n in range(3):
        log.user(f"q{n}")
    summary = log.add(ev.CompactSummary, replaced=[1, 2], summary="s")
    checkpoint = log.add(
        ev.UserMessage, text="checkpoint", checkpoint=ev.Checkpoint(summary=summary)
    )
    before, last = log.events[:-1], log.events[-1]
    vouches = {
        "another summary": lambda s: s.vouch(summary + 100, 0, 2, 999),
        "a changed surface": lambda s: (s.vouch(summary, 0, 2, 999), s.apply(ev_user(s))),
        "another run": lambda s: s.vouch(summary, 1, 2, 999),
    }
    for why, vouch in vouches.items():
        surface = Surface()
        for event in before:
            surface.apply(event)
        vouch(surface)
        surface.apply(last)
        assert surface.entries[0].seq == checkpoint, why
        assert surface.tokens == sum(e.tokens for e in surface.entries), why


def ev_user(surface: Surface) -> ev.UserMessage:
    return ev.UserMessage(seq=surface.newest + 100, ts="t", text="appended")


def _failed_turn(log: Events, turn: int, *prompts: str, withdraw: bool = True) -> list[int]:
    """A turn of `prompts` from the inbox that fails before any reply: `turn/end` error,
    withdrawing them (as the driver does) unless told not to. Their seqs."""
    log.add(ev.TurnStart, turn=turn, items=[])
    seqs = [log.user(text, item_id=100 + n) for n, text in enumerate(prompts)]
    log.add(
        ev.TurnEnd,
        turn=turn,
        status="error",
        error="the server is unreachable",
        withdrawn=seqs if withdraw else [],
    )
    return seqs


def test_a_failed_turns_prompts_leave_the_surface_and_the_log_keeps_them() -> None:
    """Issue 25 item 4: a prompt whose turn failed before any reply is withdrawn, so sent
    again it is in the model's history once, whether replayed or applied live."""
    log = Events()
    log.add(ev.TurnStart, turn=1, items=[])
    first = log.user("first", item_id=1)
    log.assistant("answer one")
    log.add(ev.TurnEnd, turn=1, status="ok")
    failed = _failed_turn(log, 2, "hello", "and this, queued with it")
    log.add(ev.TurnStart, turn=3, items=[])
    again = log.user("hello", item_id=200)
    log.assistant("answer hello")
    log.add(ev.TurnEnd, turn=3, status="ok")
    live = Surface()
    for event in log.events:
        live.apply(event)
    replayed = log.surface()
    for surface in (live, replayed):
        users = [m["content"] for m in surface.messages() if m["role"] == "user"]
        assert users == ["first", "hello"]
        assert again in _seqs(surface) and not set(failed) & set(_seqs(surface))
        assert surface.tokens == sum(e.tokens for e in surface.entries)
    assert replayed.entries == live.entries
    assert [e.seq for e in log.events if isinstance(e, ev.UserMessage)] == [first, *failed, again]


def test_an_unwithdrawn_failure_keeps_its_prompt() -> None:
    """Only what `turn/end` names leaves: a failure after a reply (or a log written before
    withdrawal existed) keeps its prompt, as before."""
    log = Events()
    kept = _failed_turn(log, 1, "hello", withdraw=False)
    assert _seqs(log.surface()) == kept


def test_withdrawal_keeps_a_checkpoint_placed_during_the_turn() -> None:
    """A pressure compaction inside the failed turn placed its checkpoint ahead of the
    kept recent context (its seq is higher than theirs and the prompt's): the prompt
    still leaves; the checkpoint and the context before the prompt stay."""
    log = Events()
    log.user("old question")
    log.assistant("old answer")
    log.user("recent question")
    log.add(ev.TurnStart, turn=1, items=[])
    prompt = log.user("hello", item_id=9)
    checkpoint = log.compact([1, 2], "they talked before")
    log.add(ev.TurnEnd, turn=1, status="error", error="unreachable", withdrawn=[prompt])
    live = Surface()
    for event in log.events:
        live.apply(event)
    assert _seqs(log.surface()) == _seqs(live) == [checkpoint, 3]
    assert log.surface().entries == live.entries


def test_replay_keeps_the_same_books_through_a_withdrawal() -> None:
    """`from_events` hands a withdrawing `turn/end` to the same handler `apply` uses:
    every counter agrees at every prefix (a rewind rebuilds with `from_events`)."""
    log = Events()
    log.user("a")
    log.assistant("b")
    _failed_turn(log, 1, "c", "d")
    log.user("inject", source="inject")
    _failed_turn(log, 2, "e")
    log.add(ev.TurnStart, turn=3, items=[])
    log.user("e", item_id=300)
    log.assistant("f")
    log.add(ev.TurnEnd, turn=3, status="ok")
    for upto in range(len(log.events) + 1):
        live = Surface()
        for event in log.events[:upto]:
            live.apply(event)
        replayed = Surface.from_events(log.events[:upto])
        assert replayed.entries == live.entries
        books = ("tokens", "version", "reshapes", "newest", "_turn", "_replacements")
        assert [getattr(replayed, b) for b in books] == [getattr(live, b) for b in books]
    rebuilt = Surface()
    rebuilt.rebuild(log.events)
    assert rebuilt.entries == live.entries and rebuilt.tokens == live.tokens
    assert [m["content"] for m in live.messages()] == ["a", "b", "inject", "e", "f"]
