"""Issue 30 item 2 in the app: a thread whose log has a bad line in the middle opens on
the lines before it, with one warning naming `file:line` and where the rest went; a
read-only view of such a thread says the same and changes nothing."""

from __future__ import annotations

from pathlib import Path

from engine import events as ev
from engine.threads.thread import Thread
from tests.tui.conftest import settle
from tui.widgets.chat_message import Notice

BAD = b'{"seq": 1, "ts": "2025-01-01T00:00:00.000Z", "kind": "user/message", "text": "dup"}\n'


def _damage(path: Path) -> bytes:
    """Seq 1 again after the last line: the second of two writers."""
    with path.open("ab") as fh:
        fh.write(BAD)
    return path.read_bytes()


def _warnings(app) -> list[str]:
    return [n.text for n in app.query(Notice) if n.has_class("-warning") and "seq" in n.text]


async def test_the_app_opens_the_prefix_and_warns_once(app_factory, tmp_path):
    thread = Thread.create(tmp_path / "home", "local", "t-bad")
    thread.log.append(ev.UserMessage(text="kept"))
    thread.log.append(ev.AssistantMessage(content="kept too"))
    thread.close()
    damaged = _damage(thread.log.path)
    app = app_factory()
    app.start_thread = "t-bad"
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert app.runtime.thread.id == "t-bad" and not app.runtime.thread.read_only
        (warning,) = _warnings(app)
        assert f"{thread.log.path}:3: expected seq 3, found 1" in warning
        assert "session.jsonl.quarantine-" in warning
    (kept,) = [p for p in thread.dir.iterdir() if ".quarantine-" in p.name]
    assert kept.read_bytes() == BAD
    assert thread.log.path.read_bytes().startswith(damaged[: -len(BAD)])

    again = app_factory()
    again.start_thread = "t-bad"
    async with again.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert _warnings(again) == [], "said once: the writer left a clean log"


async def test_a_read_only_view_warns_and_changes_nothing(app_factory, held_thread):
    damaged = _damage(held_thread.log.path)
    app = app_factory()
    app.start_thread = "t-held"
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        assert app.runtime.thread.read_only
        (warning,) = _warnings(app)
        assert f"{held_thread.log.path}:2: expected seq 2, found 1" in warning
        assert "showing the 1 event before it" in warning
    assert held_thread.log.path.read_bytes() == damaged
    assert not [p for p in held_thread.dir.iterdir() if ".quarantine-" in p.name]
