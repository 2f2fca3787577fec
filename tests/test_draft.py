"""engine.threads.draft: the prompt kept unsent is the newest `prompt/draft` on the
thread's line."""

from __future__ import annotations

from engine import events as ev
from engine.log import SessionLog
from engine.threads.draft import current_draft, keep_draft


def test_a_draft_is_kept_once_and_follows_the_line(tmp_path):
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    log.append(ev.UserMessage(text="one"))
    assert current_draft(log) == ""
    assert keep_draft(log, "half a thought")
    assert keep_draft(log, "half a thought")  # the same text again: nothing appended
    assert [type(e) for e in log.file_events] == [ev.UserMessage, ev.PromptDraft]
    assert keep_draft(log, "   ")  # only blanks: the draft is cleared
    assert current_draft(log) == ""
    assert keep_draft(log, "second")
    log.close()

    reopened = SessionLog.open(path)
    assert current_draft(reopened) == "second"
    reopened.append(ev.SessionRewind(after=1))  # back to just after "one": the drafts
    assert current_draft(reopened) == ""  # are on the abandoned branch now
    reopened.close()


def test_a_read_only_log_cannot_keep_a_new_draft(tmp_path):
    path = tmp_path / "session.jsonl"
    log = SessionLog.open(path)
    log.append(ev.PromptDraft(text="kept"))
    log.close()
    view = SessionLog.open(path, read_only="another process writes it")
    assert current_draft(view) == "kept"
    assert keep_draft(view, "kept")  # already what the log keeps
    assert not keep_draft(view, "other words")
    assert not keep_draft(view, "")
