"""The append-only session log: one JSON object per line, per thread.

The log is the single source of truth: the surface, the turn counter, the inbox
that survives a crash and the compaction lock are all derived from it by replay.
Each line is one `engine.events` Struct; a load gives the log's consistent prefix
(every line up to the first bad one, named `file:line`).

Rooms: `line_codec` (a line to an event and back), `log_file` (the file as found:
a regular file only, read up to its first hole), `replay` (a whole file read back),
`snapshot` (a long log's events kept as msgpack), `brackets` (`TailState`) and
`session_log` (`SessionLog`, appending, the writer's quarantine of a bad line and its
check that the file it appends to is still the log). Import from `engine.log`.
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
