"""Where the log's lines start, and digests of its bytes: what lets a long thread open
from its end and read an older event only when something asks for it.

`LogIndex` keeps the offset of every `STRIDE`th line (an older event is read with the
rest of its stride: one read, a few dozen lines decoded) and a BLAKE2b digest of every
`BLOCK` bytes of the file. The resume index (engine.log.resume) carries both, so it is
checked against the log by reading the log's first and last blocks only, and a writer
can check the whole file against what it wrote (`matches`) without holding its events.

An index is "caught up" while it covers every line of the file (`size` is the file's
length): each append then adds its line (`add`). A log read whole at open has none
until it is written down (`catch_up`, at a clean exit).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import sys
from array import array
from typing import IO

STRIDE = 64
"""Lines per indexed offset."""
BLOCK = 1 << 18
"""Bytes per digest."""
DIGEST_SIZE = 16
_PERSON = b"trove log block"
_CHUNK = 8 << 20
"""Bytes read at a time while catching up."""
_TAIL_CHECK = 1 << 12
"""A last whole block is checked too when fewer bytes than this follow it."""
_STRIDE_LINES = re.compile(rb"(?:[^\n]*\n){%d}" % STRIDE)


def block_digest(data: bytes | memoryview) -> bytes:
    return hashlib.blake2b(data, digest_size=DIGEST_SIZE, person=_PERSON).digest()


def _hasher() -> hashlib.blake2b:
    return hashlib.blake2b(digest_size=DIGEST_SIZE, person=_PERSON)


def pread_exact(fh: IO[bytes], start: int, end: int) -> bytes:
    """Bytes `start`..`end` of the open file, or OSError when the file no longer holds them."""
    fh.seek(start)
    data = fh.read(end - start)
    if len(data) != end - start:
        raise OSError(f"the log holds {start + len(data):,} bytes, not {end:,}")
    return data


class LogIndex:
    """Offsets and digests of the log's first `size` bytes, its first `count` lines."""

    def __init__(self) -> None:
        self.count = 0
        """Lines indexed."""
        self.size = 0
        """Bytes they take (the end of the last whole line)."""
        self.offsets = array("Q")
        """The offset of line `i * STRIDE`, for every such line indexed."""
        self.digests = bytearray()
        """The digest of each whole block of the first `hashed` bytes."""
        self.hashed = 0
        """Bytes digested: the whole blocks, and the start of the next in `_partial`."""
        self._partial = _hasher()

    # -- growing ----------------------------------------------------------------------

    def add(self, line: bytes, at: int) -> None:
        """The line just written at offset `at` (ignored by a part not caught up to it)."""
        if self.size == at:
            if self.count % STRIDE == 0:
                self.offsets.append(at)
            self.count += 1
            self.size = at + len(line)
        if self.hashed == at:
            self._feed(line)

    def _feed(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        while view:
            room = BLOCK - self.hashed % BLOCK
            piece = view[:room]
            self._partial.update(piece)
            self.hashed += len(piece)
            view = view[len(piece) :]
            if self.hashed % BLOCK == 0:
                self.digests += self._partial.digest()
                self._partial = _hasher()

    def catch_up(self, fh: IO[bytes], end: int) -> None:
        """Index and digest the file open as `fh` up to `end`, the end of a whole line,
        from wherever each part stopped (blocking: it reads what it has not seen)."""
        position = min(self.size, self.hashed)
        carry = b""
        while position < end:
            chunk = pread_exact(fh, position, min(end, position + _CHUNK))
            if self.hashed < position + len(chunk):
                self._feed(memoryview(chunk)[max(0, self.hashed - position) :])
            if self.size < position + len(chunk):
                data = carry + chunk[max(0, self.size - position) :] if carry else chunk
                base = position + len(chunk) - len(data)
                carry = data[self._lines(data, base) :]
            position += len(chunk)

    def feed_lines(self, lines: list[bytes], at: int) -> None:
        """Index whole lines (without their newlines) read at offset `at`, where the index
        stopped: a cold open's pass over the file, which split them to decode them (their
        offsets summed in C, one Python step a stride)."""
        assert self.size == at
        if not lines:
            return
        sums = list(itertools.accumulate(map(len, lines), initial=at))
        first = -self.count % STRIDE
        self.offsets.extend([sums[i] + i for i in range(first, len(lines), STRIDE)])
        self.count += len(lines)
        self.size = sums[-1] + len(lines)

    def feed_digest(self, data: bytes, at: int) -> None:
        """Digest bytes read at offset `at`, where the digests stopped (the GIL is let go
        while a long piece is hashed: a cold open runs this beside its decoding)."""
        assert self.hashed == at
        self._feed(data)

    def _lines(self, data: bytes, base: int) -> int:
        """Index the whole lines of `data`, which starts at file offset `base` (= `size`);
        returns where the whole lines end in it."""
        pos = 0
        while True:
            if self.count % STRIDE == 0:
                stride = _STRIDE_LINES.match(data, pos)
                if stride is not None:
                    self.offsets.append(base + pos)
                    self.count += STRIDE
                    pos = stride.end()
                    continue
            end = data.find(b"\n", pos)
            if end < 0:
                self.size = base + pos
                return pos
            if self.count % STRIDE == 0:
                self.offsets.append(base + pos)
            self.count += 1
            pos = end + 1

    # -- reading ----------------------------------------------------------------------

    def stride_span(self, first: int, last: int) -> tuple[int, int]:
        """The bytes of strides `first`..`last` (inclusive) of the indexed lines."""
        start = self.offsets[first]
        end = self.offsets[last + 1] if last + 1 < len(self.offsets) else self.size
        return start, end

    # -- checking ---------------------------------------------------------------------

    def partial_digest(self) -> bytes:
        """The digest of the bytes after the last whole block."""
        return self._partial.copy().digest()

    def matches(self, fh: IO[bytes]) -> bool:
        """Whether the open file's first `hashed` bytes are the ones digested (blocking: it
        reads them all)."""
        try:
            whole = self.hashed - self.hashed % BLOCK
            for number in range(whole // BLOCK):
                expected = self.digests[number * DIGEST_SIZE : (number + 1) * DIGEST_SIZE]
                data = pread_exact(fh, number * BLOCK, (number + 1) * BLOCK)
                if block_digest(data) != expected:
                    return False
            return block_digest(pread_exact(fh, whole, self.hashed)) == self.partial_digest()
        except OSError:
            return False

    # -- kept --------------------------------------------------------------------------

    def parts(self) -> tuple[int, int, bytes, bytes, bytes]:
        """(count, size, offsets, digests, the partial block's digest), little-endian: what
        the resume index keeps. Only for an index caught up in both parts."""
        assert self.size == self.hashed
        offsets = array("Q", self.offsets)
        if sys.byteorder != "little":
            offsets.byteswap()
        return self.count, self.size, offsets.tobytes(), bytes(self.digests), self.partial_digest()

    @classmethod
    def from_parts(
        cls, fh: IO[bytes], count: int, size: int, offsets: bytes, digests: bytes, partial: bytes
    ) -> LogIndex | None:
        """The index kept for the first `size` bytes of the open log, if those bytes are the
        ones it was made of at both ends: its first block and its last (partial) one are
        read and digested again. None when they differ, or the parts do not fit together."""
        whole = size - size % BLOCK
        strides = -(-count // STRIDE)
        if (
            count < 0
            or len(offsets) != 8 * strides
            or len(digests) != DIGEST_SIZE * (whole // BLOCK)
            or (count == 0) != (size == 0)
        ):
            return None
        index = cls()
        index.offsets.frombytes(offsets)
        if sys.byteorder != "little":
            index.offsets.byteswap()
        # The body is sealed (a damaged one never gets here): its ends are checked
        # against the log's size, not every offset (a loop over the whole thread).
        if index.offsets and (index.offsets[0] != 0 or index.offsets[-1] >= size):
            return None
        index.count, index.size = count, size
        index.digests = bytearray(digests)
        # The first block (the thread's first lines), and the last bytes: the last whole
        # block too when few bytes follow it.
        checked = {0} if whole else set()
        if whole and size - whole < _TAIL_CHECK:
            checked.add(whole // BLOCK - 1)
        try:
            for number in checked:
                data = pread_exact(fh, number * BLOCK, (number + 1) * BLOCK)
                if block_digest(data) != digests[number * DIGEST_SIZE : (number + 1) * DIGEST_SIZE]:
                    return None
            tail = pread_exact(fh, whole, size)
        except OSError:
            return None
        index._partial.update(tail)
        index.hashed = size
        if index.partial_digest() != partial:
            return None
        return index
