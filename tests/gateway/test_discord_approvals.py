"""Approvals on Discord through the real discord.py client: a prompt with message components,
presses as INTERACTION_CREATE (type 3) answered over POST /interactions/{id}/{token}/callback,
with the real stdio notes server whose ``write`` tool is in the server's ``ask`` list."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.tools.approvals import DENIED_RESULT
from gateway.config.schema import Config, parse_config
from gateway.delivery.approvals import NOT_YOURS_TEXT
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from tests.gateway.conftest import GENERAL_ID, GUILD_ID, gateway_config, settled_inbound

pytestmark = pytest.mark.filterwarnings("ignore:'audioop' is deprecated:DeprecationWarning")

NOTES_SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers" / "notes_server.py"
WRITE = '[[tool:notes__write {"name": "plan", "text": "sell"}]] save my plan'
ALICE_ID = 1001
BOB_ID = 1002


def approval_config(base: Config) -> Config:
    data = base.model_dump(mode="json")
    server = {"command": sys.executable, "args": [str(NOTES_SERVER)], "ask": ["write"]}
    data["mcp"] = {"servers": {"notes": server}}
    return parse_config(data)


async def prompt_in(discord_emulator: DiscordEmulator, channel_id: int) -> dict[str, Any]:
    async with asyncio.timeout(10):
        count = 1
        while True:
            sent = await discord_emulator.wait_for_sent(channel_id, count)
            for message in sent:
                if message.get("components"):
                    return message
            count = len(sent) + 1


def custom_id(prompt: dict[str, Any], label: str) -> str:
    buttons = [b for row in prompt["components"] for b in row["components"]]
    return str(next(b["custom_id"] for b in buttons if b["label"] == label))


async def test_a_press_by_someone_else_is_refused_and_the_writer_allows(
    tmp_path: Path, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    config = approval_config(gateway_config(tmp_path, anthropic, discord=discord_emulator))
    async with open_app(config, with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            asked = discord_emulator.push_message(
                GENERAL_ID, WRITE, guild_id=GUILD_ID, mention_bot=True, author_id=ALICE_ID
            )
            prompt = await prompt_in(discord_emulator, GENERAL_ID)
            assert "notes__write" in prompt["content"] and '"text": "sell"' in prompt["content"]

            discord_emulator.press_button(
                prompt["id"], custom_id(prompt, "Allow once"), user_id=BOB_ID, user_name="bob"
            )
            [refused] = await discord_emulator.wait_for_interaction_callbacks(1)
            assert refused["type"] == 4
            assert refused["data"]["content"] == NOT_YOURS_TEXT
            assert refused["data"]["flags"] == 64, "only Bob sees the refusal"

            discord_emulator.press_button(
                prompt["id"], custom_id(prompt, "Allow once"), user_id=ALICE_ID
            )
            await settled_inbound(gateway, "discord", str(asked["id"]))
        finally:
            await gateway.stop(grace_seconds=2.0)
    assert discord_emulator.interaction_callbacks[-1]["type"] == 6
    replies = discord_emulator.sent_messages(GENERAL_ID)
    assert any("saved plan" in m["content"] for m in replies)
    shown = discord_emulator.message(prompt["id"])
    assert shown is not None and not shown.get("components"), "buttons removed"
    assert "Allowed once." in shown["content"]


async def test_deny_in_a_direct_message(
    tmp_path: Path, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    dm_id = 700000000000000031
    config = approval_config(gateway_config(tmp_path, anthropic, discord=discord_emulator))
    async with open_app(config, with_tools=True) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            asked = discord_emulator.push_message(dm_id, WRITE, author_id=ALICE_ID)
            prompt = await prompt_in(discord_emulator, dm_id)
            discord_emulator.press_button(prompt["id"], custom_id(prompt, "Deny"), user_id=ALICE_ID)
            await settled_inbound(gateway, "discord", str(asked["id"]))
        finally:
            await gateway.stop(grace_seconds=2.0)
    contents = [m["content"] for m in discord_emulator.sent_messages(dm_id)]
    assert any(DENIED_RESULT in c for c in contents)
    assert not any("saved plan" in c for c in contents)
