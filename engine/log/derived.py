"""What the derived files beside a log (replay snapshot, resume index) share: each opens
with a magic line and a header whose first field is how many bytes of the log it covers."""

from __future__ import annotations

import contextlib
import struct
from pathlib import Path

from engine.util.private import open_derived


def discard_covering(target: Path, magic: bytes, header: struct.Struct, size: int) -> None:
    """Remove `target` if it covers more of the log than its first `size` bytes (or its
    header cannot be read): the writer does, before it cuts the log to `size`, so no
    reader meets a file about bytes that are gone."""
    try:
        with open_derived(target, 1 << 62) as fh:  # never a FIFO's open, never past a link
            head = fh.read(len(magic) + header.size)
    except FileNotFoundError:
        return
    except OSError:
        head = b""
    whole = len(head) == len(magic) + header.size and head.startswith(magic)
    if whole and header.unpack_from(head, len(magic))[0] <= size:
        return
    with contextlib.suppress(OSError):
        target.unlink()
