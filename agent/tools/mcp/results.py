"""An MCP tool result as the text the model reads (pure functions, no I/O).

Text blocks are kept as they are; resources and resource links become text with their URI;
structured content is given as JSON when the server sent no text; an ``is_error`` result is an
error text. Images become a placeholder naming their type and size (image blocks in tool results
for vision models are a later step: they need the media store's blobs).
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


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
