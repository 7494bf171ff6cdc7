"""Chat commands come from one registry: /help, Telegram's menu, permissions, unknown names.

The real daemon core against the Telegram and Anthropic emulators, with a real SQLite store.
"""

from __future__ import annotations

from pathlib import Path

from gateway.commands import CommandContext, CommandSpec, default_registry
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory, gateway_config, settled_inbound

BOB = 7


async def test_unknown_command_is_answered_by_the_bot_and_never_reaches_the_model(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_message(ALICE, "/foo bar baz")
        sent = await telegram.wait_for_sent(ALICE, 1)
        record = await settled_inbound(
            gateway, "telegram", f"{ALICE}:{update['message']['message_id']}"
        )
    assert sent[0]["text"] == "Unknown command /foo; /help lists them."
    assert anthropic.requests == []
    assert record.status == "done"


async def test_a_path_is_ordinary_text_for_the_model(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram):
        telegram.push_message(ALICE, "/etc/hosts is empty")
        sent = await telegram.wait_for_sent(ALICE, 1)
    assert sent[0]["text"].startswith("Noted: /etc/hosts is empty")
    assert len(anthropic.requests) == 1


async def test_help_and_the_telegram_menu_list_the_registered_commands(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    registry = default_registry()
    async with run_gateway(telegram=telegram):
        telegram.push_message(ALICE, "/help")
        sent = await telegram.wait_for_sent(ALICE, 1)
        telegram.push_message(ALICE, "/start")
        sent = await telegram.wait_for_sent(ALICE, 2)
    lines = sent[0]["text"].splitlines()
    assert lines[0] == "Commands:"
    # Alice is no admin here: the admins' commands (/allow, /deny) are not listed to her.
    expected = [f"{spec.usage} - {spec.description}" for spec in registry.specs(admin=False)]
    assert lines[1:] == expected
    assert "/compress [focus] - " in sent[0]["text"]
    assert sent[1]["text"] == sent[0]["text"]
    menu = [(entry["command"], entry["description"]) for entry in telegram.commands]
    assert menu == registry.menu()
    assert [name for name, _ in menu] == [
        "new",
        "stop",
        "compress",
        "usage",
        "status",
        "model",
        "memory",
        "jobs",
        "tz",
        "tools",
        "forget",
        "voice",
        "help",
    ]
    assert anthropic.requests == []


async def _secret(ctx: CommandContext) -> str:
    return f"the secret of session {ctx.address.key} is {ctx.argument or 'nothing'}"


async def test_an_admin_command_added_by_one_registration_answers_admins_only(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    registry = default_registry()
    registry.register(CommandSpec("secret", "Tell the secret", _secret, "[what]", "admin"))
    config = gateway_config(
        tmp_path,
        anthropic,
        telegram=telegram,
        telegram_settings={"allowed_users": [ALICE, BOB], "admin_users": [ALICE]},
    )
    async with open_app(config) as app:
        gateway = Gateway(app, hold_seconds=0.3, commands=registry)
        await gateway.start()
        try:
            telegram.push_message(ALICE, "/secret plans")
            from_alice = await telegram.wait_for_sent(ALICE, 1)
            telegram.push_message(BOB, "/secret plans", username="bob")
            telegram.push_message(BOB, "/help", username="bob")
            to_bob = await telegram.wait_for_sent(BOB, 2)
            telegram.push_message(ALICE, "/help")
            from_alice = await telegram.wait_for_sent(ALICE, 2)
        finally:
            await gateway.stop(grace_seconds=2.0)
    assert from_alice[0]["text"] == f"the secret of session telegram:{ALICE} is plans"
    assert to_bob[0]["text"] == "/secret is for the bot's admins only."
    assert "/secret" not in to_bob[1]["text"]
    assert "/secret [what] - Tell the secret" in from_alice[1]["text"]
    assert "secret" not in {entry["command"] for entry in telegram.commands}
    assert anthropic.requests == []
