"""The Anthropic emulator checks image and document blocks as the API does and counts them."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from PIL import Image

from sandbox.anthropic_prompt import content_block_tokens
from sandbox.anthropic_validation import InvalidRequest, validate_request


def _image(width: int, height: int, fmt: str = "PNG") -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "navy").save(buffer, format=fmt)
    return base64.b64encode(buffer.getvalue()).decode()


def _block(data: str, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _body(*blocks: dict[str, Any]) -> dict[str, Any]:
    content = [*blocks, {"type": "text", "text": "what is it?"}]
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": content}],
    }


def test_a_well_formed_image_passes() -> None:
    validate_request(_body(_block(_image(40, 30))))


@pytest.mark.parametrize(
    ("block", "error"),
    [
        (_block(_image(40, 30), "image/jpeg"), "does not match the provided media type"),
        (_block("not base64!!"), "invalid base64"),
        (_block(_image(40, 30), "image/bmp"), "media_type: Input should be"),
        (_block(_image(8001, 10)), "exceed max allowed size: 8000 pixels"),
        (
            {
                "type": "document",
                "source": {
                    "type": "base64",
                    "media_type": "application/pdf",
                    "data": base64.b64encode(b"hello").decode(),
                },
            },
            "PDF specified was not valid",
        ),
    ],
)
def test_a_bad_image_or_document_is_refused(block: dict[str, Any], error: str) -> None:
    with pytest.raises(InvalidRequest, match=error):
        validate_request(_body(block))


def test_many_images_may_not_be_over_2000_px() -> None:
    small = _block(_image(20, 20))
    validate_request(_body(*[small] * 19, _block(_image(2100, 10))))
    with pytest.raises(InvalidRequest, match="many-image requests: 2000 pixels"):
        validate_request(_body(*[small] * 20, _block(_image(2100, 10))))


def test_images_and_pdfs_are_counted_as_the_api_counts_them() -> None:
    assert content_block_tokens(_block(_image(750, 100))) == 100
    # 3136 x 2000 is downsized to 1568 x 1000 first.
    assert content_block_tokens(_block(_image(3136, 2000))) == 2091
    pdf = b"%PDF-1.7 /Type /Pages /Type /Page a /Type /Page b"
    source = {
        "type": "base64",
        "media_type": "application/pdf",
        "data": base64.b64encode(pdf).decode(),
    }
    assert content_block_tokens({"type": "document", "source": source}) == 2 * 1_800


def _tool_result_body(*result: dict[str, Any]) -> dict[str, Any]:
    use = {"type": "tool_use", "id": "toolu_1", "name": "draw", "input": {}}
    answer = {"type": "tool_result", "tool_use_id": "toolu_1", "content": list(result)}
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "tools": [{"name": "draw", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "draw"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [answer]},
        ],
    }


def test_an_image_inside_a_tool_result_is_checked_like_any_image() -> None:
    validate_request(_tool_result_body({"type": "text", "text": "a"}, _block(_image(4, 3))))
    with pytest.raises(InvalidRequest, match=r"messages\.2\.content\.0\.content\.0.*base64"):
        validate_request(_tool_result_body(_block("not base64!!")))


def test_a_tool_result_holds_only_text_image_search_result_or_document_blocks() -> None:
    stray = {"type": "tool_use", "id": "toolu_2", "name": "draw", "input": {}}
    with pytest.raises(InvalidRequest, match=r"content\.0\.type: Input should be"):
        validate_request(_tool_result_body(stray))
