"""``/model`` switches a chat's model for good; compactions are told to the chat once.

The real daemon core against the Telegram and Anthropic emulators, with a real SQLite store
that outlives a restart of the app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.config.schema import Config
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from gateway.sessions.compaction_notice import WINDOW_NOTICE
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, gateway_config, message_key, settled_inbound

HAIKU = "claude-haiku-4-5"
CHOICES: dict[str, Any] = {
    "choices": [HAIKU, {"name": "claude-opus-4-5", "context_length": 150000}]
}


async def _send(gateway: Gateway, telegram: TelegramEmulator, text: str) -> list[str]:
    """Push ``text`` from Alice and wait until its handling is over; what the bot sent."""
    before = len(telegram.sent_messages(ALICE))
    update = telegram.push_message(ALICE, text)
    await settled_inbound(gateway, "telegram", message_key(update))
    return [m["text"] for m in telegram.sent_messages(ALICE)[before:]]


async def _exchange(config: Config, telegram: TelegramEmulator, texts: list[str]) -> list[str]:
    """Start the gateway, send ``texts`` one at a time, stop it; the last message of each
    answer."""
    replies: list[str] = []
    async with open_app(config) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            for text in texts:
                replies.append((await _send(gateway, telegram, text))[-1])
        finally:
            await gateway.stop(grace_seconds=2.0)
    return replies


async def test_model_lists_switches_and_the_switch_survives_a_restart(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    config = gateway_config(tmp_path, anthropic, telegram=telegram, model_settings=CHOICES)
    listed, switched, _ = await _exchange(
        config, telegram, ["/model", "/model Claude-Haiku-4-5", "hello"]
    )
    assert listed.splitlines() == [
        "Models (/model NAME to switch):",
        "claude-sonnet-4-5 (this chat): 200K context, $3 in / $15 out per MTok",
        "claude-haiku-4-5: 200K context, $1 in / $5 out per MTok",
        "claude-opus-4-5: 150K context, $5 in / $25 out per MTok",
    ]
    assert switched.startswith(f"Switched this chat to {HAIKU} (200K context)")
    assert [r.model for r in anthropic.requests] == [HAIKU]

    # A new process: the choice is read back from the database.
    status, _, unknown = await _exchange(config, telegram, ["/status", "again", "/model gpt-9"])
    assert f"Model: {HAIKU}" in status.splitlines()
    assert [r.model for r in anthropic.requests] == [HAIKU, HAIKU]
    assert unknown == (
        "Unknown model 'gpt-9'. Choose one of: claude-sonnet-4-5, claude-haiku-4-5, "
        "claude-opus-4-5."
    )


async def test_the_new_models_window_is_the_one_compacted_against(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    config = gateway_config(tmp_path, anthropic, telegram=telegram, model_settings=CHOICES)
    replies = await _exchange(config, telegram, ["/model claude-opus-4-5", "/status"])
    assert "150K context" in replies[0]
    assert any(line.endswith("/ 150,000 tokens") for line in replies[1].splitlines())


async def test_a_compaction_is_told_once_and_status_shows_the_last_one(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    config = gateway_config(
        tmp_path, anthropic, telegram=telegram, model_settings={"context_length": 4000}
    )
    config.compression.threshold_in_background = "off"  # each compaction lands in its turn
    words = " ".join(f"word{i}" for i in range(150))
    texts = [f"message {n}: {words}" for n in range(12)]
    async with open_app(config) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            for text in texts:
                await _send(gateway, telegram, text)
            status = (await _send(gateway, telegram, "/status"))[-1]
            compactions = await app.repo.list_compactions(1)
        finally:
            await gateway.stop(grace_seconds=2.0)
    told = [m for m in telegram.sent_messages(ALICE) if m["text"] == WINDOW_NOTICE]
    applied = [c for c in compactions if c.outcome != "skipped"]
    assert applied, "the session was compacted"
    assert len(told) == len(applied)
    last = compactions[-1]  # applied or skipped: /status shows the newest attempt
    assert (
        f"the context threshold ({last.outcome}), {last.tokens_before:,} -> "
        f"{last.tokens_after:,} tokens" in status
    )


async def test_notify_false_keeps_the_chat_quiet(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    config = gateway_config(
        tmp_path, anthropic, telegram=telegram, model_settings={"context_length": 4000}
    )
    config.compression.threshold_in_background = "off"
    config.compression.notify = False
    words = " ".join(f"word{i}" for i in range(150))
    await _exchange(config, telegram, [f"message {n}: {words}" for n in range(8)])
    assert not [m for m in telegram.sent_messages(ALICE) if m["text"] == WINDOW_NOTICE]
