"""Request bodies kept as pre-encoded JSON pieces, so a turn re-encodes only what is new.

A long session's body is mostly the same bytes every turn: the old messages. :class:`EncodedRun`
holds the encoded elements of the ``messages`` array, older ones joined into frozen segments,
and :class:`WireBody` hands the pieces to the SDK's raw request path without joining them (an
async byte stream with a known length, replayable for the SDK's retries).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

FREEZE_BATCH = 512
"""Elements joined into one frozen segment: few pieces to send, little to redo on a rollback."""
KEEP_OPEN = 64
"""Newest elements never frozen: the ones a cache marker or a new message can still change."""


def dumps_json(value: Any) -> bytes:
    """The one JSON encoding of every request body: compact, UTF-8, no NaN."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def object_head(fields: dict[str, Any], last_key: str) -> bytes:
    """``{...fields...,"last_key":`` : the encoding of ``fields`` opened for one more key."""
    encoded = dumps_json(fields)
    opening = b"{" if encoded == b"{}" else encoded[:-1] + b","
    return opening + dumps_json(last_key) + b":"


class EncodedRun:
    """The encoded elements of a JSON array, appended one by one and truncated from the end.

    Elements older than the newest :data:`KEEP_OPEN` are joined in batches of
    :data:`FREEZE_BATCH`; truncating into a frozen batch drops the whole batch, so
    :meth:`truncate` says how many elements really remain.
    """

    def __init__(self) -> None:
        self._segments: list[bytes] = []
        self._pending: list[bytes] = []
        self._pending_start = 0

    def __len__(self) -> int:
        return self._pending_start + len(self._pending)

    def append(self, element: bytes) -> None:
        """Add one encoded element at the end."""
        self._pending.append(element)
        if len(self._pending) >= FREEZE_BATCH + KEEP_OPEN:
            self._segments.append(b",".join(self._pending[:FREEZE_BATCH]))
            del self._pending[:FREEZE_BATCH]
            self._pending_start += FREEZE_BATCH

    def truncate(self, count: int) -> int:
        """Keep at most the first ``count`` elements; returns how many are kept (<= count)."""
        if count >= self._pending_start:
            del self._pending[count - self._pending_start :]
            return len(self)
        keep = count // FREEZE_BATCH
        del self._segments[keep:]
        self._pending = []
        self._pending_start = keep * FREEZE_BATCH
        return self._pending_start

    def pieces(self) -> list[bytes]:
        """The elements as byte pieces, comma-separated, without the brackets."""
        pieces: list[bytes] = []
        for segment in self._segments:
            if pieces:
                pieces.append(b",")
            pieces.append(segment)
        if self._pending:
            if pieces:
                pieces.append(b",")
            pieces.append(b",".join(self._pending))
        return pieces


class WireBody:
    """A request body as byte pieces: iterated by the HTTP client, never joined on the hot path.

    It is an async byte stream of known length (sent with ``Content-Length``), and it answers
    ``seekable``/``tell``/``seek`` so an SDK that replays only rewindable bodies still retries.
    """

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces
        self.length = sum(len(piece) for piece in pieces)
        self._position = 0

    def __len__(self) -> int:
        return self.length

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece

    def to_bytes(self) -> bytes:
        """The whole body in one piece (tests, logs of a failed request)."""
        return b"".join(self.pieces)

    def read(self, size: int = -1) -> bytes:
        """Read from the current position, like a file (the iteration ignores the position)."""
        data = self.to_bytes()[self._position :]
        if size >= 0:
            data = data[:size]
        self._position += len(data)
        return data

    def seekable(self) -> bool:
        """Always: every iteration starts from the first piece."""
        return True

    def tell(self) -> int:
        """The read position."""
        return self._position

    def seek(self, position: int, whence: int = 0) -> int:
        """Move the read position (the SDK rewinds to where it started before a retry)."""
        base = {0: 0, 1: self._position, 2: self.length}[whence]
        self._position = max(0, min(self.length, base + position))
        return self._position
