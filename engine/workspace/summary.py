"""What one thread's log amounts to, for listings and for searching every thread.

`trove threads` and `trove history search --all` would otherwise replay every log
in full on every call, so the derivation is cached beside the log, `summary.cache`:

- derived only from the log by the code the tools use, so a cached answer equals a
  fresh one;
- keyed by the log's identity (device, inode, size, mtime and ctime, a digest of its
  first and last bytes) taken before the read, and by the thread's scope: a log
  that grew, was rewound, rewritten or copied never matches;
- stored only when the read saw exactly what the key describes (a writer appending
  meanwhile leaves no cache);
- written atomically by readers, never under the thread's lock; one that cannot be
  read, is no regular file or is too large is not used. Private (0600) like the log.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from engine.continuity.archive.extract import extract_records, hidden_seqs, surface_inputs
from engine.continuity.archive.records import Source
from engine.continuity.archive.status import HistoryScan, scan_history, scope_binding
from engine.events import (
    AssistantMessage,
    CompactEnd,
    InboxQueued,
    LogEvent,
    SessionOneShot,
    SessionRewind,
    SessionTitle,
    ToolResult,
    UserMessage,
)
from engine.log import LoadResult, read_events
from engine.log.line import current_line
from engine.log.log_file import open_log
from engine.surface import Surface
from engine.threads.paths import LOG_NAME, ThreadNotFoundError, thread_dir
from engine.util.private import read_derived, write_derived
from engine.util.safe_text import safe_text

CACHE_NAME = "summary.cache"
FORMAT = 6
"""Bumped whenever what a summary holds, how it is derived or how it is keyed changes."""
TITLE_CHARS = 60
EDGE_BYTES = 4096
"""The key's digest covers this many bytes at each end of the log (the first prompt,
the title, is at its head)."""

Key = tuple[int, int, int, int, int, bytes, str]
"""Device, inode, size, mtime (ns), ctime (ns), digest of the log's ends, scope binding."""


@dataclass(frozen=True)
class ThreadSummary:
    """One thread at the end of its log."""

    thread: str
    title: str
    """The first prompt, one line, terminal-safe ("(empty)" when there is none)."""
    messages: int
    """User prompts and assistant replies (checkpoints, injections and tool results aside)."""
    compactions: int
    """Compactions that completed (`compact/end` without an error)."""
    last_activity: str
    """`ts` of the last message or compaction in the log ("" when it has none)."""
    scan: HistoryScan
    """The archive references, as `scan_history` folds them at the end of the log."""
    packed_active: msgspec.Raw
    """The active messages, encoded: decoded only when read (`active`), since `--all`
    opens a few threads and `threads` none (decoding them was most of reading a cache)."""
    folded: list[str]
    """Their texts casefolded, in order: what `--all` matches terms against, folded once."""
    problem: str | None = None
    """What ends the log's consistent prefix (`session.jsonl:LINE: what`), which is all
    that is summarized; None for a log that loads whole (the only kind cached)."""
    last_message: str = ""
    """`ts` of the last prompt or reply written, on any branch ("" when none): what orders
    the listing, which opening a thread, a command or a compaction does not change."""
    one_shot: bool = False
    """Begun by `trove -p` (`session/one-shot`)."""

    @functools.cached_property
    def active(self) -> list[Source]:
        """The active (not compacted) messages as search sources, oldest first."""
        return _ACTIVE.decode(self.packed_active)


class _Cached(msgspec.Struct, array_like=True):
    format: int
    key: Key
    summary: ThreadSummary


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(_Cached)
_ACTIVE = msgspec.msgpack.Decoder(list[Source])


def first_prompt(events: Sequence[LogEvent]) -> str:
    """The title: the first thing the user asked, on one line."""
    for event in events:
        if isinstance(event, InboxQueued) or (
            isinstance(event, UserMessage) and event.checkpoint is None and event.source != "inject"
        ):
            words = safe_text(event.text).split()
            if words:
                return " ".join(words)[:TITLE_CHARS]
    return "(empty)"


def derive(thread_id: str, scope: str, events: Sequence[LogEvent]) -> ThreadSummary:
    """The summary of the log's events (what the cache holds).

    The title is the thread's first prompt in the file (what the listing
    shows without reading further); everything else is read off the
    thread's current line, as the tools and the app see it after a rewind.
    """
    title, last_message, one_shot = _headline(events)
    events = current_line(events)
    messages = compactions = 0
    last = ""
    for event in events:
        if isinstance(event, UserMessage):
            if event.checkpoint is None and event.source != "inject":
                messages += 1
                last = event.ts or last
        elif isinstance(event, AssistantMessage):
            messages += 1
            last = event.ts or last
        elif isinstance(event, ToolResult | SessionRewind):
            last = event.ts or last
        elif isinstance(event, CompactEnd) and event.error is None:
            compactions += 1
            last = event.ts or last
    surface = Surface.from_events(events)
    active = extract_records(surface_inputs(surface.entries, hidden_seqs(events)))
    return ThreadSummary(
        thread_id,
        title,
        messages,
        compactions,
        last,
        scan_history(events, scope),
        msgspec.Raw(_ENCODER.encode(active)),
        [source.text.casefold() for source in active],
        last_message=last_message,
        one_shot=one_shot,
    )


def _headline(events: Sequence[LogEvent]) -> tuple[str, str, bool]:
    """What the listing shows of the whole file: the title (the last `/rename`, else the
    first prompt), when a message was last written, and whether `-p` began it."""
    title = ""
    last = ""
    one_shot = False
    for event in events:
        if isinstance(event, UserMessage):
            if event.checkpoint is None and event.source != "inject":
                last = event.ts or last
        elif isinstance(event, AssistantMessage | InboxQueued):
            last = event.ts or last
        elif isinstance(event, SessionTitle):
            title = event.title
        elif isinstance(event, SessionOneShot):
            one_shot = True
    return (_one_line(title) or first_prompt(events)), last, one_shot


def _one_line(text: str) -> str:
    words = safe_text(text).split()
    return " ".join(words)[:TITLE_CHARS] if words else ""


def summarize(
    home: Path, user_id: str, thread_id: str, directory: Path | None = None
) -> ThreadSummary:
    """The thread's summary, from its cache when the log has not changed since.

    `directory` is the thread's (`thread_dir`), when the caller has it already.
    A log with a bad line is summarized up to it (its consistent prefix), with
    `problem` naming the line; nothing is changed on disk, and no cache is kept.
    Raises `ThreadNotFoundError` (no log) or `OSError` (one that cannot be read).
    """
    directory = directory or thread_dir(home, user_id, thread_id)
    log_path = directory / LOG_NAME
    scope = scope_binding(user_id, thread_id)
    try:
        key = log_key(log_path, scope)
    except FileNotFoundError:
        raise ThreadNotFoundError(f"no thread {thread_id!r} for user {user_id!r}") from None
    cache = directory / CACHE_NAME
    found = _load(cache, key)
    if found is not None and found.thread == thread_id:
        return found
    loaded = _read_log(log_path)
    summary = derive(thread_id, scope, loaded.events)
    if loaded.damage is not None:
        damage = loaded.damage
        return dataclasses.replace(summary, problem=f"{LOG_NAME}:{damage.line}: {damage.problem}")
    if loaded.torn is None and loaded.good_bytes == key[2] and _same(log_path, key):
        _store(cache, key, summary)
    return summary


def log_key(log_path: Path, scope: str) -> Key:
    """What identifies this exact log content, cheaply: a stat and a read of each end.

    A rewrite in place changes the ctime, which, unlike the mtime, cannot be
    set back; the digest of the ends catches one within a tick of the clock the
    file system stamps with (a coarse one), at least where the title is.
    """
    with open_log(log_path) as fh:
        stat = os.fstat(fh.fileno())
        head = fh.read(min(stat.st_size, EDGE_BYTES))
        fh.seek(max(0, stat.st_size - EDGE_BYTES))
        tail = fh.read(min(stat.st_size, EDGE_BYTES))
    digest = hashlib.blake2b(head + tail, digest_size=16).digest()
    return (*_identity(stat), digest, scope)


def _identity(stat: os.stat_result) -> tuple[int, int, int, int, int]:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def max_bytes(log_size: int) -> int:
    """The largest cache a log of this size can give: its active texts twice (as they are,
    and casefolded, which can triple a character's bytes), with room to spare."""
    return 8 * log_size + (1 << 20)


def _read_log(log_path: Path) -> LoadResult:
    return read_events(log_path)


def _same(log_path: Path, key: Key) -> bool:
    """Whether the log still has the identity the key was taken from (after the read)."""
    try:
        stat = os.stat(log_path)
    except OSError:
        return False
    return _identity(stat) == key[:5]


def _load(cache: Path, key: Key) -> ThreadSummary | None:
    try:
        data = read_derived(cache, max_bytes(key[2]))
        cached = _DECODER.decode(data)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, TypeError, ValueError):
        return None
    if cached.format != FORMAT or tuple(cached.key) != key:
        return None
    return cached.summary


def _store(cache: Path, key: Key, summary: ThreadSummary) -> None:
    """Write the cache atomically; any failure leaves the cache unused, never an error
    (as does a cache past `max_bytes`, which would not be read)."""
    data = _ENCODER.encode(_Cached(FORMAT, key, summary))
    if len(data) <= max_bytes(key[2]):
        write_derived(cache, [data])
