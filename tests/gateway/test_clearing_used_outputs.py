"""Tool outputs the model has used are cleared without a summary, through the real daemon:
Telegram emulator -> gateway -> agent loop -> Anthropic emulator, with the notes MCP server (the
SDK's own server API) as a stdio child giving large results."""

from __future__ import annotations

from pathlib import Path

from agent.engines.toolkit.tool_output_pruning import PRUNED_OUTPUT_PREFIX
from agent.tokens import count_text_tokens
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from gateway.sessions.compaction_notice import PRUNED_NOTICE
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.anthropic_replies import last_user_message, user_text
from sandbox.anthropic_summary import is_summary_request
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, gateway_config
from tests.gateway.test_mcp_tools import mcp_config, send, tool_results

WINDOW = 16_000
"""Threshold 8,000 tokens; a result keeps at most 8% of the window (1,280 tokens)."""
READS = 6


async def test_a_long_tool_session_clears_used_outputs_without_a_summary(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    base = gateway_config(
        tmp_path, anthropic, telegram=telegram, model_settings={"context_length": WINDOW}
    )
    async with open_app(mcp_config(base), with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            replies = [
                await send(gateway, telegram, f'[[tool:notes__huge {{"lines": 400}}]] log {n}')
                for n in range(READS)
            ]
            sixth = len(anthropic.requests) - 1  # the request reading the sixth result
            first_call = str(tool_results(anthropic, sixth)[0]["tool_use_id"])
            read_again = f'[[tool:tool_output {{"call": "{first_call}", "page": 1}}]] the first?'
            again = await send(gateway, telegram, read_again)
        finally:
            await gateway.stop()
        [session] = await app.repo.list_sessions(key=f"telegram:{ALICE}")
        compactions = await app.repo.list_compactions(session.id)

    assert all(reply.startswith("Tool result:") for reply in replies)
    assert all(record.status == 200 for record in anthropic.requests)
    assert not any(
        is_summary_request(user_text(last_user_message(record.body["messages"])))
        for record in anthropic.requests
    )
    assert {(c.trigger, c.outcome) for c in compactions} == {("prune", "pruned_only")}
    texts = [str(block["content"]) for block in tool_results(anthropic, sixth)]
    assert len(texts) == READS
    assert all(PRUNED_OUTPUT_PREFIX in text for text in texts[:-2])
    assert PRUNED_OUTPUT_PREFIX not in texts[-1] and "line 0:" in texts[-1]
    assert count_text_tokens(texts[-1]) <= WINDOW * 0.08 * 1.1
    # Nothing is lost: the first output, long cleared, is read again by its call id.
    assert again.startswith(f"Tool result: [result of call {first_call}, page 1 of ")
    assert "line 0: the quick brown fox" in again
    sent = [m["text"] for m in telegram.sent_messages(ALICE)]
    assert not any(PRUNED_NOTICE in text for text in sent)
