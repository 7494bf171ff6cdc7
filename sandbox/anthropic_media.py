"""Images and documents in the Anthropic emulator: the API's checks and its token counts.

Checks (each a 400 in the API's words): the source shape, a supported ``media_type``, valid
base64, bytes that are what the media type says, at most 5 MB of base64 per image, at most
8000 px a side (2000 px when a request has more than 20 images), at most 100 images per
request; PDFs at most 32 MB and 100 pages. Counts: an image costs ``width x height / 750``
tokens after the API's own downsizing to a 1568 px long edge; a PDF page
:data:`PDF_PAGE_TOKENS` (its text and an image of it); a text document its text.
"""

from __future__ import annotations

import base64
import binascii
import functools
import io
import math
import re
from typing import Any

from PIL import Image, UnidentifiedImageError

IMAGE_MEDIA_TYPES = {
    "image/jpeg": "JPEG",
    "image/png": "PNG",
    "image/gif": "GIF",
    "image/webp": "WEBP",
}
MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024
MAX_IMAGE_EDGE = 8000
MAX_MANY_IMAGES_EDGE = 2000
MANY_IMAGES = 20
MAX_IMAGES_PER_REQUEST = 100
MAX_PDF_BYTES = 32 * 1024 * 1024
MAX_PDF_PAGES = 100
API_LONG_EDGE = 1568
"""The API downsizes larger images to this long edge before counting them."""
IMAGE_TOKEN_DIVISOR = 750
PDF_PAGE_TOKENS = 1_800
_TOO_LARGE_SIDE = "At least one of the image dimensions exceed max allowed size"
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


class MediaError(Exception):
    """An image or document block the real API would refuse (the message is the API's)."""


def _decoded(data: Any, location: str) -> bytes:
    if not isinstance(data, str) or not data:
        raise MediaError(f"{location}.source.data: Field required")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MediaError(f"{location}.source.data: invalid base64 data") from exc


@functools.lru_cache(maxsize=16)  # a session resends its images each turn
def _image_size(raw: bytes, media_type: str, location: str) -> tuple[int, int]:
    try:
        with Image.open(io.BytesIO(raw)) as image:
            fmt, size = image.format, image.size
    except (UnidentifiedImageError, OSError) as exc:
        raise MediaError(f"{location}.source: Could not process image") from exc
    if fmt != IMAGE_MEDIA_TYPES[media_type]:
        raise MediaError(
            f"{location}.source: Image does not match the provided media type {media_type}"
        )
    return size


def image_dimensions(block: dict[str, Any], location: str) -> tuple[int, int] | None:
    """Check an image block; its (width, height), or None for a URL source (not fetched)."""
    source = block.get("source")
    if not isinstance(source, dict):
        raise MediaError(f"{location}.source: Field required")
    if source.get("type") == "url":
        return None
    if source.get("type") != "base64":
        raise MediaError(f"{location}.source.type: Input should be 'base64' or 'url'")
    media_type = source.get("media_type")
    if media_type not in IMAGE_MEDIA_TYPES:
        allowed = ", ".join(f"'{name}'" for name in IMAGE_MEDIA_TYPES)
        raise MediaError(f"{location}.source.media_type: Input should be {allowed}")
    data = source.get("data")
    if isinstance(data, str) and len(data) > MAX_IMAGE_BASE64_BYTES:
        raise MediaError(
            f"{location}.source.base64: image exceeds 5 MB maximum: "
            f"{len(data)} bytes > {MAX_IMAGE_BASE64_BYTES} bytes"
        )
    width, height = _image_size(_decoded(data, location), media_type, location)
    if max(width, height) > MAX_IMAGE_EDGE:
        raise MediaError(
            f"{location}.source.base64.data: {_TOO_LARGE_SIDE}: {MAX_IMAGE_EDGE} pixels"
        )
    return width, height


def pdf_pages(block: dict[str, Any], location: str) -> int | None:
    """Check a document block; its page count (None for a text or URL document)."""
    source = block.get("source")
    if not isinstance(source, dict):
        raise MediaError(f"{location}.source: Field required")
    if source.get("type") in ("text", "url", "content"):
        return None
    if source.get("type") != "base64" or source.get("media_type") != "application/pdf":
        raise MediaError(f"{location}.source.media_type: Input should be 'application/pdf'")
    raw = _decoded(source.get("data"), location)
    if len(raw) > MAX_PDF_BYTES:
        raise MediaError(f"{location}.source: PDF exceeds {MAX_PDF_BYTES} bytes")
    if not raw.startswith(b"%PDF"):
        raise MediaError(f"{location}.source: The PDF specified was not valid.")
    pages = max(1, len(_PDF_PAGE.findall(raw)))
    if pages > MAX_PDF_PAGES:
        raise MediaError(
            f"{location}.source: A maximum of {MAX_PDF_PAGES} PDF pages may be provided."
        )
    return pages


def check_request_media(messages: list[Any]) -> None:
    """Check every image and document block of a request, and the per-request limits."""
    sizes: list[tuple[str, tuple[int, int]]] = []
    for location, block in _media_blocks(messages):
        if block.get("type") == "image":
            found = image_dimensions(block, location)
            if found is not None:
                sizes.append((location, found))
        elif block.get("type") == "document":
            pdf_pages(block, location)
    if len(sizes) > MAX_IMAGES_PER_REQUEST:
        raise MediaError(f"messages: Too many images: {len(sizes)} > {MAX_IMAGES_PER_REQUEST}")
    if len(sizes) > MANY_IMAGES:
        for location, (width, height) in sizes:
            if max(width, height) > MAX_MANY_IMAGES_EDGE:
                raise MediaError(
                    f"{location}.source.base64.data: {_TOO_LARGE_SIDE} "
                    f"for many-image requests: {MAX_MANY_IMAGES_EDGE} pixels"
                )


def _media_blocks(messages: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every content block with its location, those inside a tool_result's content too."""
    found: list[tuple[str, dict[str, Any]]] = []
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        for b_index, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict):
                continue
            location = f"messages.{index}.content.{b_index}"
            found.append((location, block))
            nested = block.get("content") if block.get("type") == "tool_result" else None
            for n_index, part in enumerate(nested if isinstance(nested, list) else []):
                if isinstance(part, dict):
                    found.append((f"{location}.content.{n_index}", part))
    return found


def image_block_tokens(block: dict[str, Any]) -> int | None:
    """The API's count for a checked base64 image (None when it cannot be measured)."""
    try:
        found = image_dimensions(block, "image")
    except MediaError:
        return None
    if found is None:
        return None
    width, height = found
    scale = min(1.0, API_LONG_EDGE / max(width, height))
    return max(1, math.ceil(width * scale * height * scale / IMAGE_TOKEN_DIVISOR))


def document_block_tokens(block: dict[str, Any]) -> int | None:
    """The API's count for a checked base64 PDF (None when it cannot be measured)."""
    try:
        pages = pdf_pages(block, "document")
    except MediaError:
        return None
    return None if pages is None else pages * PDF_PAGE_TOKENS
