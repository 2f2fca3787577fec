"""Extraction: what becomes a source, and its identity."""

from __future__ import annotations

from engine import events as ev
from engine.continuity import (
    OfferedMessage,
    extract_records,
    hidden_seqs,
    is_source_id,
    source_id,
    surface_inputs,
)
from engine.continuity.archive import fts
from engine.surface import Surface


def one(message: dict, *, seq: int = 1, hidden: bool = False):
    records = extract_records([OfferedMessage(seq, message["role"], message, hidden)])
    return records[0] if records else None


def test_visible_user_and_assistant_text_are_sources() -> None:
    user = one({"role": "user", "content": "hello there"})
    assert user is not None and user.text == "hello there" and user.role == "user"
    assert is_source_id(user.source_id)
    reply = one({"role": "assistant", "content": "hi"}, seq=2)
    assert reply is not None and reply.text == "hi" and reply.seq == 2


def test_tool_calls_render_name_and_arguments_after_content() -> None:
    message = {
        "role": "assistant",
        "content": "let me look",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "grep", "arguments": '{"q":"x"}'},
            },
            {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
        ],
    }
    assert one(message).text == 'let me look\ngrep({"q":"x"})\nls({})'


def test_tool_result_text_is_a_source() -> None:
    record = one({"role": "tool", "tool_call_id": "c1", "content": "3 matches"})
    assert record.role == "tool" and record.text == "3 matches"


def test_system_messages_and_hidden_injections_are_excluded() -> None:
    assert one({"role": "system", "content": "you are"}) is None
    assert one({"role": "user", "content": "framework context"}, hidden=True) is None


def test_reasoning_fields_are_never_read() -> None:
    message = {
        "role": "assistant",
        "content": "answer",
        "reasoning": "secret chain",
        "reasoning_content": "more secret",
    }
    assert one(message).text == "answer"


def test_mixed_lists_keep_strings_and_text_parts_in_order() -> None:
    content = [
        "first",
        {"type": "image_url", "image_url": {"url": "data:..."}, "text": "not this"},
        {"type": "text", "text": "second"},
        {"type": "input_audio", "text": "nor this"},
        {"type": "file", "file": {"file_data": "AAAA"}},
        "third",
    ]
    assert one({"role": "user", "content": content}).text == "first\nsecond\nthird"


def test_binary_and_image_only_messages_give_no_record() -> None:
    assert one({"role": "user", "content": b"\x00\x01"}) is None
    assert one({"role": "user", "content": [{"type": "image_url", "image_url": {}}]}) is None
    assert one({"role": "user", "content": ""}) is None


def test_source_id_covers_role_identity_and_text() -> None:
    base = source_id("user", 5, "text")
    assert base == source_id("user", 5, "text")
    assert (
        len(
            {
                base,
                source_id("assistant", 5, "text"),
                source_id("user", 6, "text"),
                source_id("user", 5, "text!"),
            }
        )
        == 4
    )
    assert base.startswith("r") and len(base) == 33


def test_edited_message_is_a_new_source_version() -> None:
    before = one({"role": "user", "content": "deploy to staging"}, seq=9)
    after = one({"role": "user", "content": "deploy to production"}, seq=9)
    assert before.source_id != after.source_id


def test_cut_marks_truncation_and_keeps_the_id() -> None:
    record = one({"role": "user", "content": "x" * 100})
    cut = record.cut(40)
    assert cut.truncated and len(cut.text) == 40 and cut.source_id == record.source_id
    assert record.cut(100) is record
    [limited] = extract_records(
        [(1, "user", {"role": "user", "content": "y" * 50}, False)], max_record_chars=10
    )
    assert limited.truncated and limited.text == "y" * 10


def test_surface_inputs_skip_checkpoints_and_mark_injections() -> None:
    events = [
        ev.UserMessage(seq=1, text="question"),
        ev.UserMessage(seq=2, text="injected context", source="inject"),
        ev.AssistantMessage(seq=3, content="answer", tool_calls=[]),
        ev.CompactSummary(seq=4, summary="s", replaced=[1, 3]),
        ev.UserMessage(seq=5, text="summary", checkpoint=ev.Checkpoint(summary=4)),
        ev.UserMessage(seq=6, text="after"),
    ]
    surface = Surface.from_events(events)
    records = extract_records(surface_inputs(surface.entries, hidden_seqs(events)))
    assert [r.text for r in records] == ["after"]
    early = Surface.from_events(events[:3])
    assert [
        r.text for r in extract_records(surface_inputs(early.entries, hidden_seqs(events)))
    ] == ["question", "answer"]


def test_tokens_are_casefolded_words_and_cjk_bigrams() -> None:
    assert fts.tokens("Hello WORLD ZX-4471") == ["hello", "world", "zx", "4471"]
    assert fts.tokens("蓝色钥匙") == ["蓝色", "色钥", "钥匙", "匙"]
    assert fts.tokens("好") == ["好"]
    assert fts.index_text("Straße 钥匙") == "strasse  钥匙匙 ".replace("钥匙匙", "钥匙 匙")
    terms = fts.query_terms('" OR * NOT NEAR( x )')
    assert [t.text for t in terms] == ["or", "not", "near", "x"]
    assert fts.fts_query(terms, every=True) == '"or" AND "not" AND "near" AND "x"'
    assert [(t.text, t.prefix) for t in fts.query_terms("钥")] == [("钥", True)]
    assert fts.query_terms("!!! ***") == []


def test_continuity_tool_traffic_is_marked_as_echo() -> None:
    def call(call_id: str, name: str) -> dict:
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}

    items = [
        (
            1,
            "assistant",
            {"role": "assistant", "content": "", "tool_calls": [call("a", "history_search")]},
            False,
        ),
        (
            2,
            "tool",
            {"role": "tool", "tool_call_id": "a", "content": '{"status": "available"}'},
            False,
        ),
        (
            3,
            "assistant",
            {"role": "assistant", "content": "", "tool_calls": [call("b", "grep")]},
            False,
        ),
        (4, "tool", {"role": "tool", "tool_call_id": "b", "content": "grep output"}, False),
        (
            5,
            "assistant",
            {
                "role": "assistant",
                "content": "I will note it",
                "tool_calls": [call("c", "task_note")],
            },
            False,
        ),
    ]
    assert [r.echo for r in extract_records(items)] == [True, True, False, False, False]
    assert extract_records(items)[0].cut(3).echo
