"""An MCP tool result as the model reads it (pure functions, no I/O of their own).

Text blocks are kept as they are; resources and resource links become text with their URI;
structured content is given as JSON when the server sent no text; an ``is_error`` result is an
error text. Images become a placeholder naming their type and size, unless the session shows
them (:class:`agent.tools.result_images.ResultImages`: its model sees images): the result is then
a list of parts, its images attachment parts as a user's photos are, each image that cannot be
read (or made to fit the API's limits) its placeholder.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from agent.tools.registry import ToolContent
from agent.tools.result_images import ResultImages

ERROR_PREFIX = "Error: "
LEADING_ERROR_WORD = re.compile(r"^error\b[\s:]*", re.IGNORECASE)
EMPTY_RESULT = "(the tool returned nothing)"
MIN_BLOB_CHARS = 200
"""A base64 string this long in structured content is data (an image), not words."""
BASE64 = re.compile(r"[A-Za-z0-9+/\s]+={0,2}")


def result_text(result: CallToolResult) -> str:
    """The whole result as one text for the model (an error result starts with ``Error:``)."""
    parts = [block_text(block) for block in result.content]
    structured = structured_text(result)
    if structured is not None:
        parts.append(structured)
    text = "\n".join(part for part in parts if part) or EMPTY_RESULT
    return error_text(text) if result.is_error else text


def error_text(text: str) -> str:
    """``text`` as an error result: ``Error: ...`` (a server's own ``Error executing ...``
    becomes ``Error: executing ...``, not ``Error: Error executing ...``)."""
    if text.startswith(ERROR_PREFIX):
        return text
    return ERROR_PREFIX + LEADING_ERROR_WORD.sub("", text, count=1)


def structured_text(result: CallToolResult) -> str | None:
    """The structured content as JSON, only where no text block says it already (servers send
    both the same data twice); base64 blobs in it are placeholders, never text."""
    if result.structured_content is None:
        return None
    if any(isinstance(block, TextContent) for block in result.content):
        return None
    return json.dumps(_without_blobs(result.structured_content), ensure_ascii=False, indent=1)


def _without_blobs(value: Any) -> Any:
    """``value`` with every long base64 string (an image, a file) as a placeholder."""
    if isinstance(value, dict):
        return {key: _without_blobs(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_blobs(item) for item in value]
    if isinstance(value, str) and len(value) >= MIN_BLOB_CHARS and BASE64.fullmatch(value):
        return f"[base64 data, {_decoded_size(value)} bytes, not shown]"
    return value


def result_content(result: CallToolResult, images: ResultImages | None = None) -> ToolContent:
    """The result for the model: its text (:func:`result_text`), or, when ``images`` shows
    images and the result has some, its parts in order (text parts and image parts)."""
    has_images = any(isinstance(block, ImageContent) for block in result.content)
    if images is None or result.is_error or not has_images or not images.shown():
        return result_text(result)
    parts = [_part(block, images) for block in result.content]
    if all(part.get("type") == "text" for part in parts):  # no image could be read
        return result_text(result)
    structured = structured_text(result)
    if structured is not None:
        parts.append(_text_part(structured))
    return [part for part in parts if part.get("type") != "text" or part.get("text")]


def _part(block: Any, images: ResultImages) -> dict[str, Any]:
    """One block as a content part: an image as an image part when it can be read."""
    if isinstance(block, ImageContent):
        data = _decoded(block.data)
        part = images.part(data, block.mime_type) if data is not None else None
        if part is not None:
            return part
    return _text_part(block_text(block))


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def block_text(block: Any) -> str:
    """One content block as text."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return f"[image: {block.mime_type}, {_decoded_size(block.data)} bytes, not shown]"
    if isinstance(block, AudioContent):
        return f"[audio: {block.mime_type}, {_decoded_size(block.data)} bytes, not played]"
    if isinstance(block, ResourceLink):
        described = f" ({block.description})" if block.description else ""
        return f"[resource link: {block.uri}{described}]"
    if isinstance(block, EmbeddedResource):
        return _resource_text(block.resource)
    return f"[{getattr(block, 'type', 'unknown')} content not shown]"


def _resource_text(resource: TextResourceContents | BlobResourceContents) -> str:
    if isinstance(resource, TextResourceContents):
        return f"[resource {resource.uri}]\n{resource.text}"
    kind = resource.mime_type or "binary"
    return f"[resource {resource.uri}: {kind}, {_decoded_size(resource.blob)} bytes, not shown]"


def _decoded(data: str) -> bytes | None:
    """The bytes of strict base64, None for anything else."""
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
