"""Images made ready for the model: a format the API takes, a long edge it will not shrink,
and a size under its per-image limit (Pillow does the decoding and encoding).

An image already within the limits keeps its exact bytes; otherwise it is resized to
``max_edge`` on its long side and re-encoded (PNG stays PNG when it fits, else JPEG at
decreasing quality until it fits).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from agent.attachments import IMAGE_MIME_TYPES
from gateway.media.png_chunks import without_bad_ancillary_chunks

FORMAT_MIME = {"JPEG": "image/jpeg", "PNG": "image/png", "GIF": "image/gif", "WEBP": "image/webp"}
"""Pillow's format names for the image types the API accepts."""
JPEG_QUALITIES = (90, 80, 70, 60, 45, 30)
"""Qualities tried in turn when an image must shrink in bytes, best first."""
MAX_DECODED_PIXELS = 60_000_000
"""Refuse to decode larger images (a decompression bomb, or no photo a person sends)."""


class UnreadableImage(Exception):
    """The bytes are not an image Pillow can read (or an absurdly large one)."""


@dataclass(frozen=True, slots=True)
class PreparedImage:
    """Image bytes the API accepts, with their type and size in pixels."""

    data: bytes
    mime_type: str
    width: int
    height: int


def prepare_image(data: bytes, *, max_edge: int, max_bytes: int) -> PreparedImage:
    """``data`` as an image within ``max_edge`` px and ``max_bytes``; raises
    :class:`UnreadableImage`. A PNG whose only fault is a bad checksum in an ancillary chunk
    (as browsers and the API take it) is read without that chunk."""
    try:
        return _prepared(data, max_edge, max_bytes)
    except UnreadableImage:
        repaired = without_bad_ancillary_chunks(data)
        if repaired is None:
            raise
        return _prepared(repaired, max_edge, max_bytes)


def _prepared(data: bytes, max_edge: int, max_bytes: int) -> PreparedImage:
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.width * image.height > MAX_DECODED_PIXELS:
                raise UnreadableImage(f"{image.width}x{image.height} is too large to decode")
            mime = FORMAT_MIME.get(image.format or "")
            fits = max(image.size) <= max_edge and len(data) <= max_bytes
            # Decoded even when kept as it is: a truncated or corrupt file whose header reads
            # fine would otherwise reach the model API, be refused there, and stay in the
            # session's history failing every later request.
            image.load()
            if mime in IMAGE_MIME_TYPES and fits:
                return PreparedImage(data, mime, image.width, image.height)
            return _reencoded(image, max_edge, max_bytes)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise UnreadableImage(type(exc).__name__) from exc


def _reencoded(image: Image.Image, max_edge: int, max_bytes: int) -> PreparedImage:
    """The image shrunk to ``max_edge`` and encoded to fit ``max_bytes``."""
    frame = image.copy()  # the first frame of an animation; the model sees stills
    frame.thumbnail((max_edge, max_edge), Image.Resampling.LANCZOS)
    if image.format == "PNG":
        encoded = _encode(frame, "PNG")
        if len(encoded) <= max_bytes:
            return PreparedImage(encoded, "image/png", frame.width, frame.height)
    rgb = frame.convert("RGB")
    for quality in JPEG_QUALITIES:
        encoded = _encode(rgb, "JPEG", quality=quality)
        if len(encoded) <= max_bytes:
            break
    return PreparedImage(encoded, "image/jpeg", rgb.width, rgb.height)


def _encode(image: Image.Image, fmt: str, **options: int) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, optimize=True, **options)
    return buffer.getvalue()
