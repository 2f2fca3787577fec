"""The append-only session log: one JSON object per line, per thread.

The log is the single source of truth. The surface the model sees, the turn
counter, the inbox that survives a crash and the compaction lock are all
derived from it by replay, so a reader only ever needs this file.

Each line is one `engine.events` Struct: a load gives typed events (the
log's consistent prefix: every line up to the first bad one, which is named
`file:line`), and an append takes a typed payload and stamps it.

Rooms: `line_codec` (one line to one event and back; `LogCorruptError`),
`log_file` (the file as found: only a regular file is opened, read up to its
first hole, copied hole for hole), `replay` (a whole file read back, the torn
tail and the first bad line found), `snapshot` (a long log's events kept as
msgpack beside it, used only while the log still begins with the bytes they
came from), `brackets` (`TailState`: the open turn, the open compaction, the
end-seed) and `session_log` (`SessionLog`, appending; `LogWriteError`; the
writer's quarantine of a bad line and what follows it, and its check that the
file it appends to is still the log). Import from `engine.log`; the
rooms are its implementation.
"""

from engine.events import Event
from engine.log.brackets import TailState
from engine.log.line_codec import LogCorruptError, decode_line, encode_line, from_dict, parse_line
from engine.log.replay import LoadResult, read_events
from engine.log.session_log import (
    Clock,
    Listener,
    ListenerErrorHandler,
    LogWriteError,
    SessionLog,
)
from engine.util.collector import paused_gc

__all__ = [
    "Clock",
    "Event",
    "Listener",
    "ListenerErrorHandler",
    "LoadResult",
    "LogCorruptError",
    "LogWriteError",
    "SessionLog",
    "TailState",
    "decode_line",
    "encode_line",
    "from_dict",
    "paused_gc",
    "parse_line",
    "read_events",
]
