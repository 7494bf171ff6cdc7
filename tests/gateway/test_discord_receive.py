"""Discord's receive path: attachments reach the model or get a notice, never silence; allowlist
entries are typed, and a reset token stops the adapter with one clear error (the daemon then has
nothing left)."""

from __future__ import annotations

import asyncio
import base64
import io
import logging
from typing import Any

import pytest
from PIL import Image

from gateway.platforms.discord.adapter import DiscordAdapter
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from sandbox.discord_attachments import attachment
from tests.gateway.conftest import DISCORD_TOKEN_ENV, GatewayFactory

pytestmark = pytest.mark.filterwarnings("ignore:'audioop' is deprecated:DeprecationWarning")

DM_ID = 700000000000000030
ALICE_ID = 1001
WAIT = 15.0


def discord_adapter(gateway: Gateway) -> DiscordAdapter:
    adapter = gateway.adapters["discord"]
    assert isinstance(adapter, DiscordAdapter)
    return adapter


def _png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "olive").save(buffer, format="PNG")
    return buffer.getvalue()


def _last_user_blocks(anthropic: AnthropicEmulator) -> list[dict[str, Any]]:
    user = [m for m in anthropic.requests[-1].body["messages"] if m["role"] == "user"][-1]
    content = user["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [{k: v for k, v in block.items() if k != "cache_control"} for block in content]


async def test_an_image_and_a_pdf_attachment_reach_the_model_with_the_text(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    picture = _png(300, 200)
    pdf = b"%PDF-1.4 /Type /Page\n%%EOF"
    async with run_gateway(discord=discord_emulator):
        image = discord_emulator.cdn.upload("bird.png", "image/png", picture, width=300, height=200)
        discord_emulator.push_message(
            DM_ID, "is this a heron?", author_id=ALICE_ID, attachments=[image]
        )
        sent = await discord_emulator.wait_for_sent(DM_ID, 1, timeout=WAIT)
        block, caption = _last_user_blocks(anthropic)
        assert block["type"] == "image"
        assert base64.b64decode(block["source"]["data"]) == picture
        assert caption == {"type": "text", "text": "is this a heron?"}
        assert sent[0]["content"].startswith("Noted: is this a heron?")
        document = discord_emulator.cdn.upload("notes.pdf", "application/pdf", pdf)
        discord_emulator.push_message(DM_ID, "", author_id=ALICE_ID, attachments=[document])
        await discord_emulator.wait_for_sent(DM_ID, 2, timeout=WAIT)
        [block] = _last_user_blocks(anthropic)
        assert block["type"] == "document"
        assert base64.b64decode(block["source"]["data"]) == pdf
    assert discord_emulator.cdn.downloads == ["bird.png", "notes.pdf"]


async def test_an_attachment_over_25_mb_gets_a_notice_without_a_download(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(discord=discord_emulator):
        huge = discord_emulator.cdn.upload(
            "scan.pdf", "application/pdf", b"%PDF", announced_size=30 * 1024 * 1024
        )
        discord_emulator.push_message(DM_ID, "", author_id=ALICE_ID, attachments=[huge])
        sent = await discord_emulator.wait_for_sent(DM_ID, 1, timeout=WAIT)
        assert '"scan.pdf" is too large' in sent[0]["content"]
        assert "up to 25 MB" in sent[0]["content"]
        discord_emulator.push_message(DM_ID, "plain text now", author_id=ALICE_ID)
        sent = await discord_emulator.wait_for_sent(DM_ID, 2, timeout=WAIT)
    assert sent[1]["content"].startswith("Noted: plain text now")
    assert discord_emulator.cdn.downloads == []
    assert [r.last_user_text for r in anthropic.requests] == ["plain text now"]


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (attachment(2, "voice-message.ogg", "audio/ogg", voice=True), "transcription is not"),
        (attachment(3, "clip.mp4", "video/mp4"), "can't read videos yet"),
    ],
    ids=["voice", "video"],
)
async def test_a_voice_message_or_a_video_gets_a_notice_without_the_model(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
    item: dict,
    expected: str,
) -> None:
    async with run_gateway(discord=discord_emulator):
        discord_emulator.push_message(DM_ID, "", author_id=ALICE_ID, attachments=[item])
        sent = await discord_emulator.wait_for_sent(DM_ID, 1, timeout=WAIT)
    assert expected in sent[0]["content"]
    assert anthropic.requests == []


async def test_a_sticker_reaches_the_model_as_its_name(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator, anthropic: AnthropicEmulator
) -> None:
    sticker = {"id": "749054660769218631", "name": "wave", "format_type": 1}
    async with run_gateway(discord=discord_emulator):
        discord_emulator.push_message(DM_ID, "", author_id=ALICE_ID, stickers=[sticker])
        sent = await discord_emulator.wait_for_sent(DM_ID, 1, timeout=WAIT)
    assert sent[0]["content"].startswith("Noted: [sticker: wave]")
    assert [r.last_user_text for r in anthropic.requests] == ["[sticker: wave]"]


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
