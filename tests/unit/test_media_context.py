"""Attachments in the context: counted as the API charges them, pruned like old tool outputs
(a placeholder that says what was there, the reference kept), and summarised as placeholders."""

from __future__ import annotations

from agent.attachments import (
    MAX_IMAGE_TOKENS,
    PDF_PAGE_TOKENS,
    AttachmentRef,
    attachment_of,
    attachment_part,
    image_tokens,
)
from agent.engines.toolkit.summary_prompt import serialize_message
from agent.engines.toolkit.tool_output_pruning import prune_tool_outputs
from agent.tokens import (
    IMAGE_TOKENS,
    count_message_tokens,
    count_text_tokens,
    estimate_message_tokens_rough,
)

SHARED = 1_796_289_240.0  # 2026-12-03 09:14 UTC
PHOTO = AttachmentRef(
    "photo", "ab" * 32, "image/jpeg", 900_000, width=1280, height=960, shared_at=SHARED
)
PDF = AttachmentRef("document", "cd" * 32, "application/pdf", 1, pages=4, file_name="q3.pdf")
BIG = b"\xff" * 900_000


def _photo_message(caption: str = "my cat") -> dict[str, object]:
    return {
        "role": "user",
        "content": [attachment_part(PHOTO, BIG), {"type": "text", "text": caption}],
    }


def test_image_tokens_follow_the_api_rule_and_its_cap() -> None:
    assert image_tokens(1280, 960) == 1280 * 960 // 750
    assert image_tokens(1568, 1176) == 2458
    assert image_tokens(4000, 3000) == MAX_IMAGE_TOKENS


def test_a_stored_count_includes_the_image_and_the_pdf_pages_not_their_base64() -> None:
    caption_tokens = count_text_tokens("my cat")
    assert count_message_tokens(_photo_message()) == 4 + 1638 + caption_tokens
    document = {"role": "user", "content": [attachment_part(PDF, b"%PDF" * 1000)]}
    assert count_message_tokens(document) == 4 + 4 * PDF_PAGE_TOKENS


def test_the_rough_estimate_counts_an_image_as_a_fixed_amount() -> None:
    estimate = estimate_message_tokens_rough(_photo_message())
    assert IMAGE_TOKENS <= estimate < IMAGE_TOKENS + 20  # not ~300,000 for the base64


def test_old_images_become_placeholders_that_keep_the_reference_and_the_caption() -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        _photo_message(),
        {"role": "assistant", "content": "a cat"},
        _photo_message("recent"),
    ]
    pruned = prune_tool_outputs(messages, start=1, end=3)
    placeholder, caption = pruned[1]["content"]
    assert placeholder["text"] == "[image: photo, 1280x960, shared 2026-12-03 09:14]"
    assert attachment_of(placeholder) == PHOTO
    assert caption == {"type": "text", "text": "my cat"}
    assert pruned[3] is messages[3]  # the protected tail keeps its image
    assert messages[1]["content"][0]["type"] == "image_url"  # the input is not changed
    assert count_message_tokens(pruned[1]) < 40


def test_the_summary_model_gets_placeholders_and_captions_not_bytes() -> None:
    text = serialize_message(_photo_message(), {})
    assert text == "[user]: [image: photo, 1280x960, shared 2026-12-03 09:14]\nmy cat"
