"""Every user message is stored with the platform's own time of it (Telegram ``date``, Discord
``created_at``), and a session reloaded from the store keeps that time as its clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.compressor.context_compressor import ContextCompressor
from gateway.sessions.runtime import SessionAddress
from sandbox.clock import ManualClock
from sandbox.discord_api import DiscordEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory, settled_inbound

pytestmark = pytest.mark.filterwarnings("ignore:'audioop' is deprecated:DeprecationWarning")

PLATFORM_TIME = 1_764_000_000.0
"""A platform time a year before the wall clock: what is stored must be the platform's."""
DISCORD_EPOCH_MS = 1_420_070_400_000
DM_ID = 700000000000000030


@pytest.fixture
async def telegram_of_last_year(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[TelegramEmulator]:
    """A Telegram emulator whose clock (and so every message's ``date``) reads last year."""
    from tests.gateway.conftest import TELEGRAM_TOKEN_ENV

    clock = ManualClock(PLATFORM_TIME)
    emulator = TelegramEmulator(clock=clock.now)
    await emulator.start()
    monkeypatch.setenv(TELEGRAM_TOKEN_ENV, emulator.token)
    try:
        yield emulator
    finally:
        await emulator.stop()


async def test_telegram_message_date_is_stored_as_its_time_and_is_the_session_clock(
    run_gateway: GatewayFactory, telegram_of_last_year: TelegramEmulator
) -> None:
    telegram = telegram_of_last_year
    address = SessionAddress(f"telegram:{ALICE}", "telegram", str(ALICE), str(ALICE))
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_message(ALICE, "what did we say on monday?")
        await settled_inbound(gateway, "telegram", f"{ALICE}:{update['message']['message_id']}")
        runtime = await gateway.app.sessions.get(address)
        records = await gateway.app.repo.all_messages(runtime.session_id)
        gateway.app.sessions.forget(address.key)
        reloaded = await gateway.app.sessions.get(address)
    users = [r for r in records if r.role == "user"]
    assert [r.sent_at for r in users] == [float(update["message"]["date"])] == [PLATFORM_TIME]
    assert all(r.sent_at is None for r in records if r.role != "user")
    assert reloaded.clock.newest == PLATFORM_TIME
    # The compressor's cooldown runs on the session's clock too, not on the wall clock.
    assert isinstance(reloaded.agent.engine, ContextCompressor)
    reloaded.agent.engine.restore_state({"cooldown_until": PLATFORM_TIME + 600})
    assert 500 < reloaded.agent.engine.cooldown_remaining() <= 600


async def test_discord_message_creation_time_is_stored_as_its_time(
    run_gateway: GatewayFactory, discord_emulator: DiscordEmulator
) -> None:
    async with run_gateway(discord=discord_emulator) as gateway:
        posted = discord_emulator.push_message(DM_ID, "hello from a DM", author_id=1001)
        await settled_inbound(gateway, "discord", str(posted["id"]))
        (session,) = await gateway.app.repo.list_sessions()
        records = await gateway.app.repo.all_messages(session.id)
    created_ms = (int(posted["id"]) >> 22) + DISCORD_EPOCH_MS
    assert [r.sent_at for r in records if r.role == "user"] == [created_ms / 1000]
