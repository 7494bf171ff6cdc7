"""Discord's receive path: attachments are never met with silence, allowlist entries are typed,
and a reset token stops the adapter with one clear error (the daemon then has nothing left)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from gateway.platforms.discord import DiscordAdapter
from gateway.run import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from sandbox.discord_world import attachment
from tests.gateway.conftest import DISCORD_TOKEN_ENV, GatewayFactory

pytestmark = pytest.mark.filterwarnings("ignore:'audioop' is deprecated:DeprecationWarning")

DM_ID = 700000000000000030
ALICE_ID = 1001
WAIT = 15.0


def discord_adapter(gateway: Gateway) -> DiscordAdapter:
    adapter = gateway.adapters["discord"]
    assert isinstance(adapter, DiscordAdapter)
    return adapter


@pytest.mark.parametrize(
    ("item", "named"),
    [
        (attachment(1, "cat.png", "image/png"), "images"),
        (attachment(2, "voice-message.ogg", "audio/ogg", voice=True), "voice messages"),
        (attachment(3, "notes.pdf", "application/pdf"), "files"),
    ],
    ids=["image", "voice", "file"],
)
async def test_an_attachment_without_text_gets_a_polite_reply_without_the_model(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
    item: dict,
    named: str,
) -> None:
    async with run_gateway(discord=discord_emulator):
        discord_emulator.push_message(DM_ID, "", author_id=ALICE_ID, attachments=[item])
        sent = await discord_emulator.wait_for_sent(DM_ID, 1)
    assert f"can't read {named} yet" in sent[0]["content"]
    assert anthropic.requests == []


async def test_a_sticker_gets_a_reply_and_text_with_an_image_is_answered_with_a_note(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    sticker = {"id": "749054660769218631", "name": "wave", "format_type": 1}
    async with run_gateway(discord=discord_emulator):
        discord_emulator.push_message(DM_ID, "", author_id=ALICE_ID, stickers=[sticker])
        await discord_emulator.wait_for_sent(DM_ID, 1)
        discord_emulator.push_message(
            DM_ID,
            "is this a heron?",
            author_id=ALICE_ID,
            attachments=[attachment(4, "bird.jpg", "image/jpeg")],
        )
        sent = await discord_emulator.wait_for_sent(DM_ID, 3)
    texts = [message["content"] for message in sent]
    assert "can't read stickers yet" in texts[0]
    assert "images are not supported yet" in texts[1]
    assert texts[2].startswith("Noted: is this a heron?")
    assert [r.last_user_text for r in anthropic.requests] == ["is this a heron?"]


async def test_an_allowed_id_does_not_admit_a_user_whose_username_is_that_number(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    settings = {"allow_all": False, "allowed_users": [ALICE_ID, "@carol"]}
    async with run_gateway(discord=discord_emulator, discord_settings=settings):
        discord_emulator.push_message(DM_ID, "let me in", author_id=2002, author_name=str(ALICE_ID))
        refusal = await discord_emulator.wait_for_sent(DM_ID, 1)
        carol_dm = DM_ID + 1
        discord_emulator.push_message(carol_dm, "by name", author_id=3003, author_name="carol")
        answer = await discord_emulator.wait_for_sent(carol_dm, 1)
    assert "not on its list of allowed users" in refusal[0]["content"]
    assert answer[0]["content"].startswith("Noted: by name")
    assert [r.last_user_text for r in anthropic.requests] == ["by name"]


async def test_a_token_reset_mid_run_stops_the_adapter_with_one_error_naming_the_variable(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    token = discord_emulator.token
    async with run_gateway(discord=discord_emulator) as gateway:
        await discord_emulator.revoke_token()
        async with asyncio.timeout(WAIT):
            await gateway.no_adapter_left.wait()
        failure = discord_adapter(gateway).failure
    naming = [
        r for r in caplog.records if r.levelno >= logging.ERROR and DISCORD_TOKEN_ENV in r.message
    ]
    assert failure is not None and DISCORD_TOKEN_ENV in failure
    assert len(naming) == 1
    assert token not in caplog.text


async def test_a_token_rejected_at_start_leaves_the_adapter_stopped(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.setenv(DISCORD_TOKEN_ENV, "emulated.wrong.token-value-000")
    async with run_gateway(discord=discord_emulator) as gateway:
        down = gateway.no_adapter_left.is_set()
        failure = discord_adapter(gateway).failure
    assert down
    assert failure is not None and DISCORD_TOKEN_ENV in failure
    assert "token-value-000" not in caplog.text


@pytest.mark.parametrize("missing", ["author", "channel_id", "id"])
async def test_an_event_discord_py_cannot_parse_is_quarantined_and_the_connection_lives_on(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    caplog: pytest.LogCaptureFixture,
    missing: str,
) -> None:
    caplog.set_level(logging.INFO)
    async with run_gateway(discord=discord_emulator) as gateway:
        good = discord_emulator.push_message(DM_ID, "first", author_id=ALICE_ID, deliver=False)
        broken = {key: value for key, value in good.items() if key != missing}
        broken["content"] = "private words"
        discord_emulator.push_raw_event("MESSAGE_CREATE", broken)
        discord_emulator.push_message(DM_ID, "still there?", author_id=ALICE_ID)
        sent = await discord_emulator.wait_for_sent(DM_ID, 1)
        async with asyncio.timeout(WAIT):
            # The store offers no event for a new dead letter: poll its count.
            while await gateway.app.repo.count_dead_letters("discord") < 1:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        failure = discord_adapter(gateway).failure
    assert sent[0]["content"].startswith("Noted: still there?")
    assert failure is None
    assert discord_emulator.identify_count == 1
    assert "private words" not in caplog.text
