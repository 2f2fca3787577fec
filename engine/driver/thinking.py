"""What a reasoning model thinks during one request: its text and how long it took."""

from __future__ import annotations

import time
from collections.abc import Callable


class Thinking:
    """The thinking streamed so far; its clock runs from the first thinking to the first
    text of the answer (or, when no text came, to whenever it is read)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._parts: list[str] = []
        self._began: float | None = None
        self._ended: float | None = None

    def add(self, text: str) -> None:
        if self._began is None:
            self._began = self._clock()
        self._parts.append(text)

    def answered(self) -> None:
        """The answer's text began: the thinking is over."""
        if self._began is not None and self._ended is None:
            self._ended = self._clock()

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def seconds(self) -> float | None:
        """How long it thought, to a tenth of a second (None: it did not think)."""
        if self._began is None:
            return None
        ended = self._ended if self._ended is not None else self._clock()
        return round(max(0.0, ended - self._began), 1)
