"""The summary request's pieces take their token counts from the messages' stored counts."""

from __future__ import annotations

from agent.engines.toolkit.summary_prompt import (
    SERIAL_LABEL_TOKENS,
    TOOL_RESULT_SERIAL_CHARS,
    render_pieces,
    serialize_middle,
)
from agent.tokens import cache_message_tokens, count_text_tokens
from agent.types import Message

PROSE = "The deployment failed because the migration locked the users table for too long. "


def test_a_piece_counts_the_stored_tokens_of_its_message_without_re_tokenising() -> None:
    # A stored count no tokenizer would give for this text: the piece must be built from it.
    stored: Message = {"role": "user", "content": "short text", "_tokens": 5_000}
    (piece,) = serialize_middle([stored], {})
    assert piece.tokens == 5_000 + SERIAL_LABEL_TOKENS
    assert stored["_tokens"] == 5_000


def test_a_clipped_tool_result_counts_only_the_share_that_is_sent() -> None:
    result: Message = {"role": "tool", "tool_call_id": "c1", "content": PROSE * 200}
    cache_message_tokens(result)
    (piece,) = serialize_middle([result], {"c1": "shell"})
    assert len(piece.text) < TOOL_RESULT_SERIAL_CHARS + 200
    assert piece.tokens < cache_message_tokens(result) / 5


def test_piece_counts_stay_close_to_a_real_count_of_the_serialised_text() -> None:
    middle: list[Message] = [
        {"role": "user", "content": PROSE * 3},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "shell", "arguments": '{"cmd": "tail -n 50 log"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": PROSE * 100},
        {"role": "user", "content": [{"type": "text", "text": PROSE}, {"type": "image_url"}]},
    ]
    for message in middle:
        cache_message_tokens(message)
    pieces = serialize_middle(middle, {"c1": "shell"})
    for piece in pieces:
        # Under-counting is what could overflow the summary model: never by much.
        assert piece.tokens >= 0.8 * count_text_tokens(piece.text), piece.text[:40]
    real = count_text_tokens(render_pieces(pieces))
    assert real <= sum(piece.tokens for piece in pieces) <= 1.3 * real
