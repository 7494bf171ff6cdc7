"""What an approval prompt shows and carries: bounded arguments, Telegram's 64-byte buttons,
and which MCP tools ask."""

from __future__ import annotations

from agent.tools.approvals import PREVIEW_CHARS, ToolCallPreview
from agent.tools.mcp.spec import McpServerSpec
from gateway.platforms.base import APPROVAL_CHOICES
from gateway.platforms.telegram.approvals import (
    approval_keyboard,
    approval_text,
    parse_callback_data,
)


def test_a_preview_is_bounded_whatever_the_arguments() -> None:
    call = ToolCallPreview("notes__write", {"name": "x", "text": "y" * 100_000})
    preview = call.preview()
    assert len(preview) == PREVIEW_CHARS
    assert preview.startswith('{"name": "x", "text": "yyy') and preview.endswith("…")
    assert ToolCallPreview("t", {"a": 1}).preview() == '{"a": 1}'


def test_the_telegram_prompt_escapes_and_its_buttons_fit_64_bytes() -> None:
    text = approval_text("notes__write", '{"text": "<script>&"}')
    assert "&lt;script&gt;&amp;" in text and "<script>" not in text
    [row] = approval_keyboard("a" * 12).inline_keyboard
    assert [b.text for b in row] == [label for _, label in APPROVAL_CHOICES]
    for button, (choice, _label) in zip(row, APPROVAL_CHOICES, strict=True):
        data = str(button.callback_data)
        assert len(data.encode()) <= 64
        assert parse_callback_data(data) == ("a" * 12, choice)
    assert parse_callback_data("something else") is None
    assert parse_callback_data(None) is None


def test_a_server_asks_for_its_listed_tools_or_all_with_a_star() -> None:
    listed = McpServerSpec("notes", command="x", ask=("write",))
    assert listed.asks("write") and not listed.asks("read")
    assert McpServerSpec("notes", command="x", ask=("*",)).asks("read")
    assert not McpServerSpec("notes", command="x").asks("write")
