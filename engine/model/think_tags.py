"""Thinking a model writes inline, as `<think>…</think>` at the start of its content.

DeepSeek-R1 distills and Qwen3 served without a reasoning parser (llama.cpp, Ollama)
stream their thinking inside `content`, wrapped in a leading `<think>` tag, where
other servers send `reasoning_content` deltas. `InlineThinking` splits it off as the
deltas come (engine.model._stream applies it to every content delta), so it reaches
every front end as thinking and the log as reasoning, and is never sent back nor
summarized. Only a tag that opens the content counts (blanks before it aside): once
the start is decided the rest passes through unlooked at, so a reply that mentions
`<think>` later is left alone and costs nothing more. A tag split across deltas
(`<th` + `ink>`) is held back until it is decided; so are blanks at either end of
the thinking, which are dropped.
"""

from __future__ import annotations

OPEN = "<think>"
CLOSE = "</think>"
HELD_BLANKS = 1024
"""Blanks held back at most, before the tag or at the thinking's end; beyond, they pass."""

_START, _THINK, _AFTER, _TEXT = range(4)


class InlineThinking:
    """Splits one reply's content into (thinking, text), delta by delta."""

    def __init__(self) -> None:
        self._state = _START
        self._held = ""
        self._lead = True

    @property
    def unclosed(self) -> bool:
        """The content opened with `<think>` and no `</think>` has come (yet)."""
        return self._state == _THINK

    def feed(self, text: str) -> tuple[str, str]:
        """One content delta: the thinking and the text in it, to show now."""
        state = self._state
        if state == _TEXT:
            return "", text
        if state == _START:
            return self._start(text)
        if state == _THINK:
            return self._think(text)
        rest = text.lstrip()  # blanks between `</think>` and the answer
        if not rest:
            return "", ""
        self._state = _TEXT
        return "", rest

    def end(self) -> tuple[str, str]:
        """The stream is over: what is still held back, as thinking or text."""
        held, self._held = self._held, ""
        if self._state == _START:
            self._state = _TEXT
            return "", held
        if self._state == _THINK:
            return held.rstrip(), ""
        return "", ""

    def _start(self, text: str) -> tuple[str, str]:
        held = self._held + text
        body = held.lstrip()
        if body.startswith(OPEN):
            self._held = ""
            self._state = _THINK
            return self._think(body[len(OPEN) :])
        if OPEN.startswith(body) and len(held) <= HELD_BLANKS + len(OPEN):
            self._held = held  # blanks, or the tag's beginning: not decided yet
            return "", ""
        self._held = ""
        self._state = _TEXT
        return "", held

    def _think(self, text: str) -> tuple[str, str]:
        buf = self._held + text
        if self._lead:
            buf = buf.lstrip()
            if not buf:
                self._held = ""
                return "", ""
            self._lead = False
        at = buf.find(CLOSE)
        if at >= 0:
            self._held = ""
            self._state = _AFTER
            thought = buf[:at].rstrip()
            _, rest = self.feed(buf[at + len(CLOSE) :])
            return thought, rest
        keep = _held_back(buf)
        self._held = buf[len(buf) - keep :] if keep else ""
        return buf[: len(buf) - keep], ""


def _held_back(buf: str) -> int:
    """How much of the thinking's end to hold: a beginning of `</think>`, and the blanks
    before it (they are dropped if the tag follows)."""
    tag = next((k for k in range(len(CLOSE) - 1, 0, -1) if buf.endswith(CLOSE[:k])), 0)
    stem = buf[: len(buf) - tag]
    blanks = len(stem) - len(stem.rstrip())
    return tag + (blanks if blanks <= HELD_BLANKS else 0)
