"""Attachments on the wire: Anthropic image and document blocks with cache breakpoints where
they belong, chat-completions ``image_url`` and ``file`` parts, and never our references."""

from __future__ import annotations

import base64
import json
from typing import Any

from agent.attachments import AttachmentRef, attachment_part, placeholder_part, stored_content
from agent.model_table import lookup_model
from agent.prompt_caching import apply_anthropic_cache_control
from agent.providers.anthropic.convert import to_anthropic_request
from agent.providers.openai.wire import to_openai_message

PHOTO = AttachmentRef("photo", "ab" * 32, "image/jpeg", 5, width=800, height=600)
PDF = AttachmentRef("document", "cd" * 32, "application/pdf", 8, pages=3, file_name="q3.pdf")


def _history(*user_contents: Any) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "be brief"}]
    for index, content in enumerate(user_contents):
        messages.append({"role": "user", "content": content})
        if index < len(user_contents) - 1:
            messages.append({"role": "assistant", "content": f"answer {index}"})
    return messages


def test_a_photo_message_becomes_an_image_block_and_its_caption_carries_the_breakpoint() -> None:
    photo = attachment_part(PHOTO, b"jpeg!")
    marked = apply_anthropic_cache_control(
        _history("hello", [photo, {"type": "text", "text": "and this?"}]), native_anthropic=True
    )
    image, caption = to_anthropic_request(marked, None)["messages"][-1]["content"]
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/jpeg", "data": "anBlZyE="},
    }
    assert caption == {"type": "text", "text": "and this?", "cache_control": {"type": "ephemeral"}}


def test_a_breakpoint_on_a_message_of_only_a_document_sits_on_the_document_block() -> None:
    document = attachment_part(PDF, b"%PDF-1.4")
    marked = apply_anthropic_cache_control(_history([document], "thanks"), native_anthropic=False)
    wire = to_anthropic_request(marked, None)["messages"]
    [block] = wire[0]["content"]
    assert block["type"] == "document"
    assert base64.b64decode(block["source"]["data"]) == b"%PDF-1.4"
    assert block["cache_control"] == {"type": "ephemeral"}
    assert "attachment" not in json.dumps(wire)


def test_chat_completions_get_image_url_and_file_parts_without_our_references() -> None:
    message = {
        "role": "user",
        "content": [
            attachment_part(PHOTO, b"jpeg!"),
            attachment_part(PDF, b"%PDF"),
            {"type": "text", "text": "compare"},
        ],
    }
    image, document, text = to_openai_message(message)["content"]
    assert image == {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,anBlZyE="}}
    assert document == {
        "type": "file",
        "file": {"filename": "q3.pdf", "file_data": "data:application/pdf;base64,JVBERg=="},
    }
    assert text == {"type": "text", "text": "compare"}
    assert "attachment" in message["content"][0]  # the history itself is left as it was


def test_a_placeholder_goes_out_as_plain_text() -> None:
    placeholder = placeholder_part(PHOTO)
    assert to_openai_message({"role": "user", "content": [placeholder]})["content"] == [
        {"type": "text", "text": "[image: photo, 800x600]"}
    ]
    wire = to_anthropic_request(_history([placeholder]), None)["messages"]
    assert wire[0]["content"] == [{"type": "text", "text": "[image: photo, 800x600]"}]


def test_text_only_models_are_known_as_such() -> None:
    assert lookup_model("claude-sonnet-4-5").vision
    assert lookup_model("openai/gpt-4o").reads_pdf
    assert not lookup_model("deepseek/deepseek-chat").vision
    assert not lookup_model("my-local-llama").vision


def test_a_reference_without_its_bytes_goes_out_as_its_placeholder_keeping_the_marker() -> None:
    hollow = stored_content([attachment_part(PHOTO, b"jpeg!")])
    marked = apply_anthropic_cache_control(_history(hollow), native_anthropic=False)
    [block] = to_anthropic_request(marked, None)["messages"][0]["content"]
    assert block == {
        "type": "text",
        "text": "[image: photo, 800x600]",
        "cache_control": {"type": "ephemeral"},
    }
    assert to_openai_message({"role": "user", "content": hollow})["content"] == [
        {"type": "text", "text": "[image: photo, 800x600]"}
    ]
