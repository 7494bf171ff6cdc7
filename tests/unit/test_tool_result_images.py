"""Images in tool results: an MCP result as the model reads it, for a model that sees images and
for one that does not, and every reader of a tool result that holds images (clipping, pruning,
the two wire formats). The images are kept by the gateway's real blob store."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult, ImageContent, TextContent
from PIL import Image

from agent.attachments import attachment_of, has_payload, stored_content
from agent.engines.toolkit.tool_output_pruning import PRUNED_OUTPUT_PREFIX, prune_tool_outputs
from agent.providers.anthropic.convert import to_anthropic_request
from agent.providers.openai.wire import to_openai_message
from agent.tokens import count_message_tokens
from agent.tools.mcp.results import result_content
from agent.tools.registry import Tool, ToolRegistry
from agent.types import content_text
from gateway.media.blobs import BlobStore, hydrate_context
from gateway.media.tool_images import ToolResultImages
from gateway.settings.media import MediaSettings


def png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def image_block(data: bytes, mime_type: str = "image/png") -> ImageContent:
    return ImageContent(data=base64.b64encode(data).decode(), mime_type=mime_type)


def result(*blocks: Any, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=list(blocks), is_error=is_error)


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    return BlobStore(tmp_path / "blobs")


def images(blobs: BlobStore, *, shown: bool = True) -> ToolResultImages:
    return ToolResultImages(blobs, MediaSettings(), lambda: shown)


def tool_message(content: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": "call_1", "name": "notes__picture", "content": content}


def history(content: Any) -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "notes__picture"}}
    return [
        {"role": "user", "content": "show me"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        tool_message(content),
    ]


def test_an_image_reaches_a_model_that_sees_images_as_a_kept_attachment_part(
    blobs: BlobStore,
) -> None:
    picture = png(4, 3)
    content = result_content(
        result(TextContent(text="a chart"), image_block(picture)), images(blobs)
    )
    assert isinstance(content, list)
    text, image = content
    assert text == {"type": "text", "text": "a chart"}
    ref = attachment_of(image)
    assert ref is not None and ref.is_image and (ref.width, ref.height) == (4, 3)
    assert blobs.get(ref.sha256) == picture
    assert (
        image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(picture).decode()
    )


def test_a_model_without_vision_reads_the_placeholder_and_nothing_is_kept(blobs: BlobStore) -> None:
    content = result_content(result(image_block(png(4, 3))), images(blobs, shown=False))
    assert isinstance(content, str)
    assert content.startswith("[image: image/png, ") and content.endswith("bytes, not shown]")
    assert not blobs.root.exists()


@pytest.mark.parametrize(
    "block",
    [
        ImageContent(data=base64.b64encode(b"not a png").decode(), mime_type="image/png"),
        ImageContent(data="%%% not base64 %%%", mime_type="image/png"),
    ],
)
def test_an_unreadable_image_is_its_placeholder(blobs: BlobStore, block: ImageContent) -> None:
    content = result_content(result(TextContent(text="here"), block), images(blobs))
    assert isinstance(content, str)
    assert content.startswith("here\n[image: image/png, ")


def test_an_oversized_image_is_fitted_to_the_api_limits(blobs: BlobStore) -> None:
    content = result_content(result(image_block(png(4000, 100))), images(blobs))
    assert isinstance(content, list)
    ref = attachment_of(content[0])
    assert ref is not None and ref.width == MediaSettings().max_image_edge


def test_an_error_result_with_an_image_is_an_error_text(blobs: BlobStore) -> None:
    failed = result(TextContent(text="boom"), image_block(png(2, 2)), is_error=True)
    content = result_content(failed, images(blobs))
    assert isinstance(content, str) and content.startswith("Error: boom")


async def test_a_result_of_parts_is_clipped_as_text_and_keeps_its_image(blobs: BlobStore) -> None:
    picture = result_content(result(image_block(png(2, 2))), images(blobs))
    assert isinstance(picture, list)

    async def handler(args: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"type": "text", "text": "x" * 60_000}, *picture]

    registry = ToolRegistry([Tool("draw", "", {"type": "object"}, handler)])
    content = await registry.call("draw", {})
    assert isinstance(content, list)
    text, image = content
    assert len(text["text"]) < 51_000 and "more characters cut" in text["text"]
    assert image is picture[0]


def test_the_store_keeps_the_reference_and_a_reload_gets_the_bytes_back(blobs: BlobStore) -> None:
    content = result_content(result(image_block(png(4, 3))), images(blobs))
    stored = [{**m, "content": stored_content(m["content"])} for m in history(content)]
    assert "base64" not in str(stored[-1]["content"])
    hydrate_context(stored, blobs)
    assert stored[-1]["content"] == content


def test_the_anthropic_request_has_the_image_inside_the_tool_result(blobs: BlobStore) -> None:
    content = result_content(
        result(TextContent(text="a chart"), image_block(png(4, 3))), images(blobs)
    )
    request = to_anthropic_request(history(content), [{"name": "notes__picture"}])
    [tool_result] = request["messages"][-1]["content"]
    assert tool_result["type"] == "tool_result"
    text, image = tool_result["content"]
    assert text == {"type": "text", "text": "a chart"}
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert "attachment" not in image


def test_a_chat_completions_tool_message_reads_the_image_as_its_placeholder(
    blobs: BlobStore,
) -> None:
    content = result_content(
        result(TextContent(text="a chart"), image_block(png(4, 3))), images(blobs)
    )
    wire = to_openai_message(tool_message(content))
    assert wire["content"] == "a chart\n[image: tool result, 4x3]"


@pytest.mark.parametrize("text", ["", "a long description " * 30])
def test_pruning_an_old_tool_result_drops_its_image(blobs: BlobStore, text: str) -> None:
    picture = result_content(
        result(TextContent(text=text), image_block(png(300, 300))), images(blobs)
    )
    assert isinstance(picture, list)
    old = history(picture)
    messages = [{"role": "system", "content": "s"}, *old, {"role": "user", "content": "next"}]
    pruned = prune_tool_outputs(messages, 1, len(messages) - 1)
    content = pruned[3]["content"]
    assert "base64" not in str(content)
    assert not any(has_payload(part) for part in content if isinstance(part, dict))
    if text:
        assert content.startswith(PRUNED_OUTPUT_PREFIX)
    else:
        assert content_text(content) == "[image: tool result, 300x300]"
    assert count_message_tokens(pruned[3]) < count_message_tokens(messages[3])
