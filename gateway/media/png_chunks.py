"""PNG files read as leniently as browsers and the model API read them (pure functions): an
ancillary chunk (colour profile, text, time...) whose checksum is wrong is dropped instead of
failing the whole image; a bad critical chunk (header, pixels) still makes it unreadable."""

from __future__ import annotations

import struct
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHUNK_OVERHEAD = 12
"""Length (4 bytes), type (4), checksum (4) around each chunk's data."""
ANCILLARY_BIT = 0x20
"""Set in a chunk type's first byte (a lowercase letter) when the chunk may be skipped."""


def without_bad_ancillary_chunks(data: bytes) -> bytes | None:
    """``data`` without its ancillary chunks whose checksum is wrong; None when it is not a
    PNG, is cut short, or has no such chunk (nothing to repair)."""
    if not data.startswith(PNG_SIGNATURE):
        return None
    kept = [PNG_SIGNATURE]
    dropped = False
    pos = len(PNG_SIGNATURE)
    while pos + CHUNK_OVERHEAD <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        end = pos + CHUNK_OVERHEAD + length
        if end > len(data):
            return None
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[end - 4 : end])
        if crc != zlib.crc32(kind + body) and kind[0] & ANCILLARY_BIT:
            dropped = True
        else:
            kept.append(data[pos:end])
        pos = end
    return b"".join(kept) if dropped else None
