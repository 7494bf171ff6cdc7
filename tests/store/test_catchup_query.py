"""The newest recorded message per chat, where Discord catch-up starts, on SQLite and PostgreSQL."""

from __future__ import annotations

from gateway.store.repository import Repository

DM_CHAT = "700000000000000030"
GUILD_CHAT = "700000000000000010"
# Snowflakes of different lengths: as text "99..." sorts after "10...", as numbers it is smaller.
OLD_SHORT_ID = "99999999999999999"  # 17 digits
NEWER_LONG_ID = "100000000000000000"  # 18 digits
NEWEST_LONG_ID = "1300000000000000000"  # 19 digits
GUILD_OLD_SHORT_ID = "99999999999999998"
GUILD_NEWER_LONG_ID = "100000000000000001"


async def record(repo: Repository, platform: str, chat_id: str, message_id: str) -> None:
    await repo.record_inbound(
        platform,
        message_id,
        session_key=f"{platform}:dm:{chat_id}",
        chat_id=chat_id,
        user_id="1001",
        text="hi",
    )


async def check_newest_per_chat(repo: Repository) -> None:
    # Recorded out of order, so the answer cannot come from insertion order.
    await record(repo, "discord", DM_CHAT, NEWEST_LONG_ID)
    await record(repo, "discord", DM_CHAT, OLD_SHORT_ID)
    await record(repo, "discord", DM_CHAT, NEWER_LONG_ID)
    await record(repo, "discord", GUILD_CHAT, GUILD_NEWER_LONG_ID)
    await record(repo, "discord", GUILD_CHAT, GUILD_OLD_SHORT_ID)
    await record(repo, "telegram", DM_CHAT, "9" * 30)  # another platform's chat of that id

    newest = await repo.newest_inbound_per_chat("discord")

    assert newest == {DM_CHAT: NEWEST_LONG_ID, GUILD_CHAT: GUILD_NEWER_LONG_ID}


async def test_newest_message_per_chat_compares_snowflakes_as_numbers_on_sqlite(
    repo: Repository,
) -> None:
    await check_newest_per_chat(repo)


async def test_a_platform_without_recorded_messages_has_nothing_to_catch_up_on(
    repo: Repository,
) -> None:
    await record(repo, "telegram", "42", "42:7")

    assert await repo.newest_inbound_per_chat("discord") == {}
    assert await repo.newest_inbound_per_chat("telegram") == {}  # "42:7" is no position


async def test_newest_message_per_chat_compares_snowflakes_as_numbers_on_postgresql(
    pg_repo: Repository,
) -> None:
    await check_newest_per_chat(pg_repo)
