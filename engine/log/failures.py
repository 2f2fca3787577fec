"""What goes wrong around an append: the write itself (`LogWriteError`), or a front
end's listener (reported on the "trove" logger, never raised into the engine)."""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from pathlib import Path

from engine.errors import TroveError
from engine.events import LogEvent

Listener = Callable[[LogEvent], None]


class LogWriteError(OSError, TroveError):
    """An append that did not happen: the file is byte for byte as before it.

    An OSError (ENOSPC, EDQUOT, EFBIG, EIO, EROFS …) with the log's path, so
    callers that already treat disk failures as OSError keep working. A log
    opened read-only raises it too, with the reason as the whole message.
    """

    def __init__(self, path: Path, cause: OSError | str, *, read_only: bool = False) -> None:
        reason = cause if isinstance(cause, str) else (cause.strerror or str(cause))
        code = errno.EROFS if read_only else (getattr(cause, "errno", 0) or 0)
        self.path = path
        self.reason = reason
        self.message = reason if read_only else f"{path}: could not write to the log: {reason}"
        super().__init__(code, self.message)

    def __str__(self) -> str:
        return self.message


ListenerErrorHandler = Callable[[Listener, LogEvent, Exception], None]


def report_listener_error(listener: Listener, event: LogEvent, exc: Exception) -> None:
    """A front end's callback failed; the engine goes on and says so once, on the logger."""
    logging.getLogger("trove").warning(
        "a log listener (%s) failed on %s: %s: %s",
        getattr(listener, "__qualname__", listener),
        event.kind,
        type(exc).__name__,
        exc,
    )
