"""The damages a thread's files meet: shared by tests/test_file_faults.py and devtools/soak/.

Each damage is done the way the world does it: a file deleted, cut to half
(`truncate`), zero-filled in place, one seeded byte flipped in place, given a
huge length (for a binary file, a length field it keeps made huge; for a text
file, a sparse extension to 4 GiB, which costs no disk), replaced by a link to
/dev/zero or to a FIFO, or overwritten by another thread's copy (as `cp`
does: the same inode).
"""

from __future__ import annotations

import os
import random
import shutil
import struct
from pathlib import Path

from engine.events import AssistantMessage
from engine.log import resume, snapshot
from engine.runtime import Runtime
from tui import drawn_lines

DAMAGES = ("deleted", "truncated", "zeroed", "flipped", "huge", "link-zero", "link-fifo", "other")
NAMES = {
    "log": "session.jsonl",
    "lock": "session.lock",
    "archive": "task-history/history.sqlite",
    "terms": "task-history/history.terms",
    "snapshot": "session.jsonl.replay",
    "resume": "session.jsonl.resume",
    "drawn": "drawn.json",
    "summary": "summary.cache",
}
"""Each file of a thread, by kind, as a path in the thread's directory."""
SIDECARS = ("terms", "snapshot", "resume", "drawn", "summary")
"""The caches beside the log: the log (for the terms file, the archive) outranks them."""
HUGE = 4 << 30
"""A text file made this large by a sparse extension."""
LENGTH_FIELDS = {
    # the in-header database size, in pages (big-endian)
    "archive": (28, ">I", 0x7FFFFFFF),
    # the count of (batch id, batch key) pairs (archive_terms._HEAD)
    "terms": (40, "<I", 0xFFFFFFFF),
    # the count of events in the body (snapshot._HEADER)
    "snapshot": (len(snapshot.MAGIC) + 8, "<Q", 2**64 - 1),
    # the length of the sealed body (resume._HEADER)
    "resume": (len(resume.MAGIC) + 16, "<Q", 2**64 - 1),
}
"""For binary files: where a length is kept, as what, and the huge value put there."""
CREATING = ("link-zero", "link-fifo", "other")
"""The damages that need no file to be there already (they put one in its place)."""


def keep_drawn(rt: Runtime) -> None:
    """What the app's quit keeps beside a thread: the newest reply's lines, written the way
    it writes them (so that `drawn.json` exists to be damaged where no app ran)."""
    replies = [e for e in rt.thread.log.events if isinstance(e, AssistantMessage)]
    if not replies or not replies[-1].content:
        return
    text = replies[-1].content
    line: list[drawn_lines.Segment] = [(text, None)]
    reply = drawn_lines.DrawnReply(
        replies[-1].seq,
        drawn_lines.digest(text),
        80,
        drawn_lines.style_key("textual-dark", "none"),
        [line],
    )
    drawn_lines.save(rt.thread.dir, [reply])


def damage_file(
    kind: str, damage: str, path: Path, *, rng: random.Random, other: Path, fifo: Path
) -> tuple[int, int] | None:
    """Damage `path`, a file of kind `kind` (a key of NAMES), with `damage`; returns the
    byte range of it the damage hit (None: all of it). `other` is another thread's file
    of the same kind, `fifo` a FIFO outside the thread."""
    if damage == "link-zero" or damage == "link-fifo":
        path.unlink(missing_ok=True)
        path.symlink_to("/dev/zero" if damage == "link-zero" else fifo)
        return None
    if damage == "other":
        if path.is_symlink():
            path.unlink()
        shutil.copyfile(other, path)  # over it, as `cp` does: the same inode
        return None
    if damage == "deleted":
        path.unlink()
        return None
    size = path.stat().st_size
    if damage == "truncated":
        os.truncate(path, size // 2)
        return size // 2, size
    elif damage == "zeroed":
        with path.open("r+b") as fh:
            fh.write(b"\0" * size)
    elif damage == "flipped":
        if size == 0:
            return 0, 0
        at = rng.randrange(size)
        with path.open("r+b") as fh:
            fh.seek(at)
            byte = fh.read(1)[0]
            fh.seek(at)
            fh.write(bytes([byte ^ (1 << rng.randrange(8))]))
        return at, at + 1
    elif damage == "huge":
        field = LENGTH_FIELDS.get(kind)
        if field is not None:
            at, fmt, value = field
            with path.open("r+b") as fh:
                fh.seek(at)
                fh.write(struct.pack(fmt, value))
            return at, at + struct.calcsize(fmt)
        if kind == "summary":  # msgpack: the outer array's length made 2**32 - 1
            data = path.read_bytes()
            path.write_bytes(b"\xdd\xff\xff\xff\xff" + data[1:])
            return 0, 1
        os.truncate(path, HUGE)  # a text file: a sparse extension
        return size, size
    else:
        raise ValueError(f"no such damage: {damage!r}")
    return None
