"""No terminal receives an escape sequence or a control character from a model, the archive,
notes or a log: `safe_text` itself, then every line-oriented front end and CLI command.

The scripted server replies with the attacks the issue measured (an OSC 52 clipboard set,
a title change, a clear screen, a cursor-position query that types into the shell, an
8-bit CSI, sequences split across stream deltas); each test checks the bytes the real
`trove` process wrote, and that the visible words survived. The TUI is in tests/tui.
"""

from __future__ import annotations

import io
import json
import random
import re

from cli.printer import StreamPrinter
from devtools import scripted_server as s
from engine.events import AssistantMessage
from engine.util.safe_text import HOLD_LIMIT, SafeStream, safe_json, safe_text
from tests.cli_support import Env, trove

CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
CURSOR_QUERY = "\x1b[6n"
CSI_8BIT = "\x9b2J"
DCS = "\x1bP+q544e\x1b\\"

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def assert_clean(output: str) -> None:
    """Nothing a terminal would obey: newline and tab are the only controls left."""
    found = UNSAFE.search(output)
    assert found is None, f"control {found.group()!r} at {found.start()} in {output!r}"


# -- the function --------------------------------------------------------------------


def test_whole_sequences_go_and_the_words_stay():
    text = (
        f"Hello {CLIPBOARD}wor{TITLE}ld{CLEAR} and{CURSOR_QUERY} more{CSI_8BIT}"
        f" {DCS}end\x1b[31mred\x1b[0m\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"
    )
    assert safe_text(text) == "Hello world and more endredlink"


def test_newline_tab_cjk_and_emoji_are_kept_crlf_becomes_lf():
    text = "第一行\t列\r\n第二行 😀\u200d👍 café\n"
    assert safe_text(text) == "第一行\t列\n第二行 😀\u200d👍 café\n"
    clean = "plain text, 中文, emoji 🎉\n\tindented"
    assert safe_text(clean) is clean  # the fast path returns the very object


def test_every_other_control_goes():
    controls = "".join(chr(c) for c in [*range(0, 9), *range(11, 32), *range(0x7F, 0xA0)])
    assert safe_text(f"a{controls}b") == "ab"
    assert safe_text("lone\rcarriage") == "lonecarriage"
    assert safe_text("bidi \u202eevil\u202c \u2066iso\u2069") == "bidi evil iso"
    assert safe_text("half \ud800 pair") == "half \ufffd pair"


def test_unterminated_and_malformed_sequences_leave_no_escape():
    for text in ("\x1b]0;title never ends", "\x1b[", "\x1b", "\x9b", "a\x1b[2\rJb", "\x1bé"):
        assert_clean(safe_text(text))
    assert safe_text("\x1b]0;title never ends") == "0;title never ends"


def test_idempotent():
    for text in (
        f"{CLIPBOARD}{TITLE}x{CSI_8BIT}\r\n\x1b",
        "\x1b\x1b[[2J",
        "\x1b]\x1b]0;t\x07\x07",
        "中\x9b\x9b2Jy",
    ):
        once = safe_text(text)
        assert_clean(once)
        assert safe_text(once) == once


def test_a_sequence_split_across_pieces_is_removed_whole():
    text = f"Hello {CLIPBOARD}world{TITLE}!{CLEAR}\r\nnext {CSI_8BIT}line{DCS} 中文"
    for size in (1, 2, 3, 5, 7):
        stream = SafeStream()
        pieces = [stream.feed(text[i : i + size]) for i in range(0, len(text), size)]
        out = "".join(pieces) + stream.flush()
        assert out == safe_text(text) == "Hello world!\nnext line 中文"
        assert all(UNSAFE.search(p) is None for p in pieces)


def test_any_split_of_any_mix_streams_as_the_whole_text_does():
    atoms = [
        *HOSTILE_PIECES,
        CLIPBOARD,
        DCS,
        "\x1b",
        "\x1b[",
        "\x9b",
        "\x9d",
        "\x9c",
        "\x07",
        "\r",
        "\n",
        "\\",
        "[",
        "]",
        "0;",
        "2J",
        "m",
        "中",
        "😀",
        "\ud800",
        "\u202e",
        " ",
    ]
    rng = random.Random(9)
    for _ in range(400):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 30)))
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 6))))
        stream, shown = SafeStream(), []
        for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
            shown.append(stream.feed(text[start:end]))
        shown.append(stream.flush())
        assert all(UNSAFE.search(p) is None and "\ud800" not in p for p in shown)
        assert "".join(shown) == safe_text(text), repr(text)


def test_stream_lets_an_endless_sequence_through_as_text():
    stream = SafeStream()
    assert stream.feed("ok \x1b]52;c;") == "ok "
    shown = stream.feed("A" * (HOLD_LIMIT + 10))
    assert shown.startswith("52;c;AAA") and len(shown) == HOLD_LIMIT + 15
    assert stream.feed("\x07 done") == " done"


def test_json_keeps_the_exact_value_and_escapes_every_control():
    value = {"text": f"x{CSI_8BIT}{TITLE}\x7f\u202e中\ud800", "n": 1}
    dumped = safe_json(value)
    assert_clean(dumped)
    assert "中" in dumped  # non-ASCII stays readable
    assert json.loads(dumped) == value


# -- the front ends ---------------------------------------------------------------------

HOSTILE_PIECES = (
    "Hello ",
    "\x1b]52;c;cm0g",
    "LXJmIH4=\x07wor",
    "\x1b]0;pw",
    "ned\x07ld",
    "\x1b[2",
    "J and\x1b",
    "[6n more",
    "\x9b2J",
    " 中文 ok\r",
    "\nbye\x1b",
)
HOSTILE = "".join(HOSTILE_PIECES)
VISIBLE = "Hello world and more 中文 ok\nbye"


def test_safe_text_of_the_hostile_reply():
    assert safe_text(HOSTILE) == VISIBLE


def test_the_repl_printer_at_a_live_prompt_writes_whole_safe_lines():
    """At a terminal (`--plain` on a TTY) lines are buffered and wrapped; still no escape."""
    for whole_lines in (True, False):
        out, err = io.StringIO(), io.StringIO()
        printer = StreamPrinter(out, err, whole_lines=whole_lines)
        for piece in HOSTILE_PIECES:
            printer.on_delta(1, piece)
            assert_clean(out.getvalue())
        printer.on_event(AssistantMessage(seq=3, tool_calls=[]))
        printer.notice(f"[tool] {TITLE}x")
        printer.say(f"compacted {CLEAR}ok")
        assert out.getvalue() == VISIBLE + "\ncompacted ok\n"
        assert err.getvalue() == "[tool] x\n"


def hostile_reply() -> s.Reply:
    return s.Reply(kind="text", pieces=HOSTILE_PIECES)


def test_oneshot_writes_no_escape(env: Env, server):
    server.script(
        s.tool_calls([(f"task_note{TITLE}", f"{{{CLIPBOARD}}}")]),
        hostile_reply(),
    )
    result = trove("-p", "hi", *env.common)
    assert result.returncode == 0, result.stderr
    assert_clean(result.stdout)
    assert_clean(result.stderr)
    assert result.stdout == VISIBLE + "\n"
    assert "[tool] task_note(" in result.stderr


def test_oneshot_error_text_from_the_server_is_made_safe(env: Env, server):
    server.script(s.error(400, f"bad request {TITLE}{CLEAR}{CSI_8BIT}here"))
    result = trove("-p", "hi", *env.common)
    assert result.returncode == 1
    assert_clean(result.stdout + result.stderr)
    assert "bad request here" in result.stderr


def test_plain_writes_no_escape(env: Env, server):
    server.script(hostile_reply(), s.text(f"second{TITLE} reply"))
    result = trove("--plain", *env.common, stdin="hi\nagain\n")
    assert result.returncode == 0, result.stderr
    assert_clean(result.stdout + result.stderr)
    assert VISIBLE in result.stdout
    assert "second reply" in result.stdout


# -- the archive commands after a /compact of hostile text -----------------------------

CODE = "ZEBRA-4471"
PROMPT = f"{TITLE}The code is {CODE}{CSI_8BIT} keep it\x7f"
NOTE = f"note {CLIPBOARD}{CODE}{CSI_8BIT} done"


def compact_hostile(where: Env, server) -> str:
    """A hostile prompt and reply compacted, and a hostile note; returns the thread id."""
    server.script(
        hostile_reply(),
        s.text("Second answer."),
        s.text(f"Summary {TITLE}without the code{CSI_8BIT}."),
        s.tool_calls([("task_note", {"key": "code", "content": NOTE})]),
        s.text("Noted."),
    )
    result = trove("--plain", *where.common, stdin=f"{PROMPT}\nsecond\n/compact\nnote it\n")
    assert result.returncode == 0, result.stderr
    assert_clean(result.stdout + result.stderr)
    return next((where.home / "users" / "local" / "threads").iterdir()).name


def test_history_search_read_and_notes_write_no_escape(env: Env, server):
    compact_hostile(env, server)
    human = trove("history", "search", CODE, *env.common)
    assert human.returncode == 0, human.stderr
    assert_clean(human.stdout + human.stderr)
    assert f"The code is {CODE} keep it" in human.stdout

    raw = trove("history", "search", CODE, "--json", *env.common)
    assert_clean(raw.stdout)
    found = json.loads(raw.stdout)
    hit = next(r for r in found["results"] if r["role"] == "user" and r["batch"] is not None)
    assert CSI_8BIT in hit["excerpt"]  # JSON escapes the controls but keeps the exact text

    page = trove("history", "read", hit["id"], *env.common)
    assert page.returncode == 0, page.stderr
    assert_clean(page.stdout)
    assert page.stdout.startswith(f"The code is {CODE} keep it\n")
    exact = trove("history", "read", hit["id"], "--json", *env.common)
    assert_clean(exact.stdout)
    assert json.loads(exact.stdout)["text"] == PROMPT  # the archive kept every byte

    reply = trove("history", "search", "bye", "--role", "assistant", *env.common)
    assert_clean(reply.stdout)
    assert "Hello world and more 中文 ok" in reply.stdout

    notes = trove("notes", *env.common)
    assert notes.returncode == 0, notes.stderr
    assert_clean(notes.stdout)
    assert f"code: note {CODE} done" in notes.stdout
    notes_json = trove("notes", "--json", *env.common)
    assert_clean(notes_json.stdout)
    assert json.loads(notes_json.stdout)["notes"][0]["content"] == NOTE


def test_threads_lists_a_hostile_first_prompt_safely(env: Env, server):
    thread = compact_hostile(env, server)
    listed = trove("threads", *env.common)
    assert listed.returncode == 0, listed.stderr
    assert_clean(listed.stdout)
    assert f"{thread}" in listed.stdout and f"The code is {CODE} keep it" in listed.stdout
