"""The append-only session log: one JSON object per line, per thread.

The log is the single source of truth: the surface, the turn counter, the inbox
that survives a crash and the compaction lock are all derived from it by replay.
Each line is one `engine.events` Struct; a load gives the log's consistent prefix
(every line up to the first bad one, named `file:line`).

A long thread opens from its end: the resume index beside the log keeps its state
at the end and where its lines start, so an open reads only what came after it and
the newest events, and older events are read when something asks for them.

Rooms: `line_codec` (a line to an event and back), `log_file` (the file as found:
a regular file only, read up to its first hole), `replay` (a whole file read back),
`snapshot` (a long log's events kept as msgpack), `brackets` (`TailState`), `state`
(the line's folds: the inbox, the draft, the archive records), `change` (what a rewind
takes off the line and puts on), `index` (where lines
start, digests of the bytes), `event_list` (events read on demand), `resume` (the
resume index), `load` (an open, from the end or whole), `repair` (the writer's
repairs of a damaged log), `failures` (a write that did not happen, a listener that
failed), `file_check` (the writer's check that the file it appends to is still the
log) and `session_log` (`SessionLog`: open, append, keep). Import from `engine.log`.
"""

from engine.events import Event
from engine.log.brackets import TailState
from engine.log.event_list import FileEvents, LineEvents
from engine.log.failures import Listener, ListenerErrorHandler, LogWriteError
from engine.log.line_codec import LogCorruptError, decode_line, encode_line, from_dict, parse_line
from engine.log.replay import LoadResult, read_events
from engine.log.session_log import Clock, SessionLog
from engine.log.state import FileFacts, LineState
from engine.util.collector import paused_gc

__all__ = [
    "Clock",
    "Event",
    "FileEvents",
    "FileFacts",
    "LineEvents",
    "LineState",
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
