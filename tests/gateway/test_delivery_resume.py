"""After a crash the store says how far each turn got; the restarted gateway carries on from
there: missing reply parts only, no second model call, no user text stored twice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from telegram import Bot

from gateway.messages.inbound import InboundMessage
from gateway.runtime.app import App, open_app
from gateway.store.records import InboundLink
from gateway.text.markdown import TELEGRAM_PARSE_MODE, markdown_to_telegram
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.discord_api import DiscordEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory, gateway_config, settled_inbound

SESSION_KEY = f"telegram:{ALICE}"
DISCORD_DM = 700000000000000030

pytestmark = pytest.mark.filterwarnings("ignore:'audioop' is deprecated:DeprecationWarning")


def pushed(telegram: TelegramEmulator, text: str) -> InboundMessage:
    """A message Alice sent whose update the crashed run never confirmed (so it comes again)."""
    update = telegram.push_message(ALICE, text)
    return InboundMessage(
        platform="telegram",
        chat_id=str(ALICE),
        user_id=str(ALICE),
        text=text,
        platform_message_id=f"{ALICE}:{update['message']['message_id']}",
        session_key=SESSION_KEY,
    )


@asynccontextmanager
async def crashed_run(
    tmp_path: Path, anthropic: AnthropicEmulator, telegram: TelegramEmulator
) -> AsyncIterator[App]:
    """The store as a run that died left it (written through the repository, as it would)."""
    async with open_app(gateway_config(tmp_path, anthropic, telegram=telegram)) as app:
        yield app


async def received(app: App, *messages: InboundMessage) -> None:
    for message in messages:
        await app.repo.record_inbound(
            "telegram",
            message.platform_message_id,
            session_key=SESSION_KEY,
            chat_id=message.chat_id,
            user_id=message.user_id,
            text=message.text,
            payload=message.to_payload(),
        )


async def stored_turn(app: App, text: str, *messages: InboundMessage, answer: str = "") -> None:
    """A session whose user message (merged from ``messages``) is stored, maybe its answer."""
    repo = app.repo
    session = await repo.get_or_create_session(SESSION_KEY, platform="telegram", chat_id="42")
    await repo.append_messages(session.id, [{"role": "system", "content": "Be helpful."}], [3])
    ids = tuple(m.platform_message_id for m in messages)
    await repo.append_messages(
        session.id,
        [{"role": "user", "content": text}],
        [5],
        platform_message_id=ids[-1],
        answers=InboundLink("telegram", ids),
    )
    if answer:
        await repo.append_messages(session.id, [{"role": "assistant", "content": answer}], [5])


async def stored_user_texts(app: App) -> list[str]:
    [session] = await app.repo.list_sessions(key=SESSION_KEY)
    return [str(m.content) for m in await app.repo.all_messages(session.id) if m.role == "user"]


async def test_a_reply_cut_off_by_a_crash_sends_only_its_missing_parts_without_the_model(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    tmp_path: Path,
) -> None:
    question = pushed(telegram, "tell me a long story")
    async with crashed_run(tmp_path, anthropic, telegram) as app:
        await received(app, question)
        await stored_turn(app, question.text, question, answer="Once upon a time...")
        reply = await app.repo.plan_reply(
            "telegram",
            [question.platform_message_id],
            ["part A", "part B", "part C"],
            session_key=SESSION_KEY,
            chat_id=str(ALICE),
        )
        await app.repo.record_sent_part(reply.id, 0, "1")

    async with run_gateway(telegram=telegram) as gateway:
        done = await settled_inbound(gateway, "telegram", question.platform_message_id)
        finished = await gateway.app.repo.get_reply(reply.id)
    assert [m["text"] for m in telegram.sent_messages(ALICE)] == ["part B", "part C"]
    assert anthropic.requests == []
    assert done.status == "done"
    assert finished is not None and finished.status == "sent" and finished.unsent == ()


async def test_a_merged_turn_interrupted_before_its_answer_runs_once_and_stores_its_text_once(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    tmp_path: Path,
) -> None:
    first, second, third = (pushed(telegram, text) for text in ("first", "second", "third"))
    async with crashed_run(tmp_path, anthropic, telegram) as app:
        await received(app, first, second, third)
        await stored_turn(app, "first\n\nsecond", first, second)

    async with run_gateway(telegram=telegram) as gateway:
        await telegram.wait_for_sent(ALICE, 2)
        records = [
            await settled_inbound(gateway, "telegram", m.platform_message_id)
            for m in (first, second, third)
        ]
        users = await stored_user_texts(gateway.app)
    assert [r.last_user_text for r in anthropic.requests] == ["first\n\nsecond", "third"]
    assert users == ["first\n\nsecond", "third"]
    replies = [m["text"] for m in telegram.sent_messages(ALICE)]
    assert [reply[:12] for reply in replies] == ["Noted: first", "Noted: third"]
    assert [r.status for r in records] == ["done"] * 3
    assert records[0].reply_id == records[1].reply_id != records[2].reply_id


async def test_an_answer_stored_before_the_crash_is_delivered_without_asking_the_model_again(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    tmp_path: Path,
) -> None:
    first, second = (pushed(telegram, text) for text in ("one", "two"))
    async with crashed_run(tmp_path, anthropic, telegram) as app:
        await received(app, first, second)
        await stored_turn(app, "one\n\ntwo", first, second, answer="Both noted.")

    async with run_gateway(telegram=telegram) as gateway:
        records = [
            await settled_inbound(gateway, "telegram", m.platform_message_id)
            for m in (first, second)
        ]
        users = await stored_user_texts(gateway.app)
    assert [m["text"] for m in telegram.sent_messages(ALICE)] == ["Both noted."]
    assert anthropic.requests == []
    assert users == ["one\n\ntwo"]
    assert [r.status for r in records] == ["done", "done"]


async def test_a_part_sent_just_before_the_crash_but_not_recorded_is_not_sent_again(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    tmp_path: Path,
) -> None:
    question = pushed(telegram, "tell me a long story")
    later = pushed(telegram, "and one more thing")  # written while the reply went out
    async with crashed_run(tmp_path, anthropic, telegram) as app:
        await received(app, question)
        await stored_turn(app, question.text, question, answer="Once upon a time...")
        reply = await app.repo.plan_reply(
            "telegram",
            [question.platform_message_id],
            ["part *A*", "part B"],
            session_key=SESSION_KEY,
            chat_id=str(ALICE),
        )
        # The crashed run's send of the first part reached Telegram; its id was never stored.
        async with Bot(telegram.token, base_url=telegram.base_url) as bot:
            delivered = await bot.send_message(
                ALICE, markdown_to_telegram("part *A*"), parse_mode=TELEGRAM_PARSE_MODE
            )

    async with run_gateway(telegram=telegram) as gateway:
        done = await settled_inbound(gateway, "telegram", question.platform_message_id)
        await settled_inbound(gateway, "telegram", later.platform_message_id)
        finished = await gateway.app.repo.get_reply(reply.id)
    texts = [m["text"] for m in telegram.sent_messages(ALICE)]
    assert texts[:2] == ["part A", "part B"]
    assert len(texts) == 3 and texts[2].startswith("Noted: and one more thing")
    assert done.status == "done"
    assert finished is not None
    assert finished.parts[0].platform_message_id == str(delivered.message_id)
    assert [r.last_user_text for r in anthropic.requests] == ["and one more thing"]


async def test_a_discord_part_sent_before_the_crash_is_found_in_the_history_not_resent(
    run_gateway: GatewayFactory,
    discord_emulator: DiscordEmulator,
    anthropic: AnthropicEmulator,
    tmp_path: Path,
) -> None:
    posted = discord_emulator.push_message(DISCORD_DM, "tell me a story", author_id=1001)
    question = InboundMessage(
        platform="discord",
        chat_id=str(DISCORD_DM),
        user_id="1001",
        text="tell me a story",
        platform_message_id=str(posted["id"]),
        session_key=f"discord:dm:{DISCORD_DM}",
    )
    config = gateway_config(tmp_path, anthropic, discord=discord_emulator)
    async with open_app(config) as app:
        await app.repo.record_inbound(
            "discord",
            question.platform_message_id,
            session_key=question.session_key,
            chat_id=question.chat_id,
            user_id=question.user_id,
            text=question.text,
            payload=question.to_payload(),
        )
        reply = await app.repo.plan_reply(
            "discord",
            [question.platform_message_id],
            ["part A", "part B"],
            session_key=question.session_key,
            chat_id=question.chat_id,
        )
        # The crashed run's first part reached Discord; its id was never stored.
        world = discord_emulator.world
        delivered = world.create_message(DISCORD_DM, world.bot_id, "part A")

    async with run_gateway(discord=discord_emulator) as gateway:
        done = await settled_inbound(gateway, "discord", question.platform_message_id)
        finished = await gateway.app.repo.get_reply(reply.id)
    assert [m["content"] for m in discord_emulator.sent_messages(DISCORD_DM)] == ["part B"]
    assert done.status == "done"
    assert finished is not None and finished.parts[0].platform_message_id == delivered["id"]
    assert anthropic.requests == []
