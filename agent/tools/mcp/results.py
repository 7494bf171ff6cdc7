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
EMPTY_RESULT = "(the tool returned nothing)"


def result_text(result: CallToolResult) -> str:
    """The whole result as one text for the model (an error result starts with ``Error:``)."""
    parts = [block_text(block) for block in result.content]
    if not any(isinstance(block, TextContent) for block in result.content):
        if result.structured_content is not None:
            parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    text = "\n".join(part for part in parts if part) or EMPTY_RESULT
    return ERROR_PREFIX + text if result.is_error else text


def result_content(result: CallToolResult, images: ResultImages | None = None) -> ToolContent:
    """The result for the model: its text (:func:`result_text`), or, when ``images`` shows
    images and the result has some, its parts in order (text parts and image parts)."""
    has_images = any(isinstance(block, ImageContent) for block in result.content)
    if images is None or result.is_error or not has_images or not images.shown():
        return result_text(result)
    parts = [_part(block, images) for block in result.content]
    if all(part.get("type") == "text" for part in parts):  # no image could be read
        return result_text(result)
    if not any(isinstance(block, TextContent) for block in result.content):
        if result.structured_content is not None:
            structured = json.dumps(result.structured_content, ensure_ascii=False, indent=1)
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
