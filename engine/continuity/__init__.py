"""Task continuity: the per-thread archive of compacted sources, task notes, three tools.

Rooms: `archive/` (what a source is, the SQLite store, its search, the statuses of
its references), `search/` (`HistoryView`: the active history plus reachable
batches), `notes/` (the notebook as log events, and the message injected into every
request), `context` (the thread and position the tools run in), `tools`
(`history_search`, `history_read`, `task_note`), and `capture`, `recovery` and
`batch_report` (archiving what compaction replaced, and what a crash left).
"""

from engine.continuity.archive.extract import (
    OfferedMessage,
    extract_records,
    hidden_seqs,
    is_source_id,
    source_id,
    surface_inputs,
)
from engine.continuity.archive.records import Hit, Source
from engine.continuity.archive.status import (
    Resolution,
    archive_failure,
    archive_reference,
    resolve,
    scope_binding,
)
from engine.continuity.archive.store import (
    MAX_PAGE_COUNT,
    ArchiveError,
    ArchiveScopeError,
    ArchiveStore,
    ArchiveUnavailableError,
    BatchInfo,
    CaptureError,
    CaptureResult,
    archive_path,
    capture_offloaded,
)
from engine.continuity.context import ContinuityContext, Snapshot
from engine.continuity.notes.note import (
    Note,
    NoteError,
    normalize_notebook,
    note_event,
    notebook_at,
    write_note,
)
from engine.continuity.notes.notebook import (
    context_builder,
    notebook_message,
    notebook_message_async,
)
from engine.continuity.search.view import ActiveIndex, HistoryView
from engine.continuity.tools import AUTHORITY_CONTRACT, build_tools

__all__ = [
    "AUTHORITY_CONTRACT",
    "MAX_PAGE_COUNT",
    "ActiveIndex",
    "ArchiveError",
    "ArchiveScopeError",
    "ArchiveStore",
    "ArchiveUnavailableError",
    "BatchInfo",
    "CaptureError",
    "CaptureResult",
    "ContinuityContext",
    "Hit",
    "HistoryView",
    "Note",
    "NoteError",
    "Resolution",
    "Snapshot",
    "Source",
    "OfferedMessage",
    "archive_failure",
    "archive_path",
    "archive_reference",
    "build_tools",
    "capture_offloaded",
    "context_builder",
    "extract_records",
    "hidden_seqs",
    "is_source_id",
    "normalize_notebook",
    "note_event",
    "notebook_at",
    "notebook_message",
    "notebook_message_async",
    "resolve",
    "scope_binding",
    "source_id",
    "surface_inputs",
    "write_note",
]
