"""The gateway answers Telegram chats through the real python-telegram-bot client.

Every scenario runs the real daemon core in-process against the Telegram and Anthropic
emulators with a real SQLite store.
"""

from __future__ import annotations

import asyncio

from gateway.runtime.gateway import STOPPED_TEXT, Gateway
from gateway.sessions.runtime import SessionAddress
from gateway.text.markdown import markdown_to_telegram
from gateway.text.split import TELEGRAM_MESSAGE_LIMIT, utf16_len
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from sandbox.telegram_markdown import parse_markdown_v2
from tests.gateway.conftest import ALICE, GatewayFactory, all_quiet, settled_inbound

GROUP = -1001234567890
STRANGER = 99
BOT = "@hermes_test_bot"
WAIT = 10.0


def alice_address() -> SessionAddress:
    return SessionAddress(f"telegram:{ALICE}", "telegram", str(ALICE), str(ALICE))


async def last_assistant_text(gateway: Gateway, address: SessionAddress) -> str:
    runtime = await gateway.app.sessions.get(address)
    replies = [m for m in runtime.context if m["role"] == "assistant"]
    content = replies[-1]["content"]
    assert isinstance(content, str)
    return content


async def wait_until(predicate: object, timeout: float = WAIT) -> None:  # noqa: ASYNC109
    async with asyncio.timeout(timeout):
        # The emulator offers no event for chat actions: poll its record.
        while not predicate():  # type: ignore[operator]  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def test_private_chat_message_gets_the_model_reply_with_typing_shown(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_message(ALICE, "hello there")
        sent = await telegram.wait_for_sent(ALICE, 1)
        record = await settled_inbound(
            gateway, "telegram", f"{ALICE}:{update['message']['message_id']}"
        )
    assert sent[0]["text"].startswith("Noted: hello there")
    assert len(anthropic.requests) == 1
    assert (ALICE, "typing") in telegram.chat_actions
    assert record.status == "done"
    assert record.reply_platform_ids == (str(sent[0]["message_id"]),)
    assert {c["command"] for c in telegram.commands} >= {"new", "stop", "compress", "usage"}


async def test_typing_is_shown_only_once_a_turn_outlasts_the_typing_delay(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram, telegram_settings={"typing_delay": 1.0}):
        telegram.push_message(ALICE, "quick one")
        await telegram.wait_for_sent(ALICE, 1)
        typing_after_quick_reply = list(telegram.chat_actions)
        anthropic.inject_fault("slow", delay=1.6)
        telegram.push_message(ALICE, "slow one")
        await telegram.wait_for_sent(ALICE, 2)
    assert typing_after_quick_reply == []
    assert (ALICE, "typing") in telegram.chat_actions


async def test_group_message_is_answered_only_when_the_bot_is_mentioned(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        telegram.push_message(GROUP, "chatting among us", user_id=ALICE, chat_type="supergroup")
        telegram.push_message(GROUP, f"{BOT} what now", user_id=ALICE, chat_type="supergroup")
        sent = await telegram.wait_for_sent(GROUP, 1)
        await all_quiet(gateway, telegram)
    assert len(telegram.sent_messages(GROUP)) == 1
    assert sent[0]["text"].startswith("Noted: what now")
    assert [r.last_user_text for r in anthropic.requests] == ["what now"]


async def test_forum_topic_reply_goes_to_the_same_topic_and_its_own_session(
    run_gateway: GatewayFactory, telegram: TelegramEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        telegram.push_message(
            GROUP, f"{BOT} in topic", user_id=ALICE, chat_type="supergroup", message_thread_id=7
        )
        sent = await telegram.wait_for_sent(GROUP, 1)
        sessions = await gateway.app.repo.list_sessions()
    assert sent[0]["message_thread_id"] == 7
    assert [s.key for s in sessions] == [f"telegram:{GROUP}:topic:7"]


async def test_long_reply_is_split_within_the_limit_and_arrives_complete(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    anthropic.reply_tokens = 2600
    async with run_gateway(telegram=telegram) as gateway:
        telegram.push_message(ALICE, "tell me everything 😀")
        await telegram.wait_for_sent(ALICE, 2)
        await all_quiet(gateway, telegram)
        reply = await last_assistant_text(gateway, alice_address())
    parts = [m["text"] for m in telegram.sent_messages(ALICE)]
    assert len(parts) >= 2
    assert all(utf16_len(part) <= TELEGRAM_MESSAGE_LIMIT for part in parts)
    assert " ".join(parts).split() == reply.split()


async def test_reply_that_grows_when_rendered_arrives_formatted_in_parts_within_the_limit(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    # Rendered, every heading gains an emoji, every rule eight dashes and MarkdownV2 escapes
    # each ">", "!", "(", "." and "-": cut as Markdown, a full part would be too long as sent.
    section = "# Part {n:02d}: a > b & c < d!\n\nKeep `x-1` & *go* on (a.b).\n\n---\n\n"
    reply = "".join(section.format(n=n) for n in range(70)).strip()
    anthropic.reply_fn = lambda body: reply
    async with run_gateway(telegram=telegram, model_settings={"max_tokens": 4000}) as gateway:
        telegram.push_message(ALICE, "the plan, please")
        await telegram.wait_for_sent(ALICE, 2)
        await all_quiet(gateway, telegram)
        assert await last_assistant_text(gateway, alice_address()) == reply
    sent = telegram.sent_messages(ALICE)
    assert len(sent) >= 2
    assert len(telegram.calls_of("sendMessage")) == len(sent)  # none refused, none resent plain
    assert all(message["parse_mode"] == "MarkdownV2" for message in sent)
    assert all(utf16_len(message["source_text"]) <= TELEGRAM_MESSAGE_LIMIT for message in sent)
    for message in sent:
        assert {"code", "italic"} <= {entity["type"] for entity in message["entities"]}
    shown, _ = parse_markdown_v2(markdown_to_telegram(reply))
    assert " ".join(message["text"] for message in sent).split() == shown.split()


async def test_reply_falls_back_to_plain_text_when_telegram_rejects_the_formatting(
    run_gateway: GatewayFactory, telegram: TelegramEmulator
) -> None:
    telegram.inject_fault(
        "sendMessage", status=400, description="Bad Request: can't parse entities: bad tag"
    )
    async with run_gateway(telegram=telegram) as gateway:
        telegram.push_message(ALICE, "format this")
        sent = await telegram.wait_for_sent(ALICE, 1)
        reply = await last_assistant_text(gateway, alice_address())
    attempts = telegram.calls_of("sendMessage")
    assert attempts[0]["parse_mode"] == "MarkdownV2"
    assert sent[0]["parse_mode"] is None
    assert sent[0]["text"] == reply


async def test_user_not_on_the_allowlist_is_told_once_and_never_reaches_the_model(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        first = telegram.push_message(STRANGER, "let me in", username="mallory")
        telegram.push_message(STRANGER, "please", username="mallory")
        telegram.push_message(ALICE, "hi")
        await telegram.wait_for_sent(ALICE, 1)
        await telegram.wait_for_sent(STRANGER, 1)
        record = await settled_inbound(
            gateway, "telegram", f"{STRANGER}:{first['message']['message_id']}"
        )
    assert len(telegram.sent_messages(STRANGER)) == 1
    assert "not on its list of allowed users" in telegram.sent_messages(STRANGER)[0]["text"]
    assert [r.last_user_text for r in anthropic.requests] == ["hi"]
    assert record.status == "refused"


async def test_refused_user_is_not_told_again_after_a_restart(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram):
        telegram.push_message(STRANGER, "let me in", username="mallory")
        await telegram.wait_for_sent(STRANGER, 1)
    async with run_gateway(telegram=telegram) as gateway:
        again = telegram.push_message(STRANGER, "still me", username="mallory")
        record = await settled_inbound(
            gateway, "telegram", f"{STRANGER}:{again['message']['message_id']}"
        )
    assert record.status == "refused"
    assert len(telegram.sent_messages(STRANGER)) == 1
    assert anthropic.requests == []


async def test_allowlist_accepts_a_username(
    run_gateway: GatewayFactory, telegram: TelegramEmulator
) -> None:
    async with run_gateway(telegram=telegram):
        telegram.push_message(7, "by name", username="Bob")
        sent = await telegram.wait_for_sent(7, 1)
    assert sent[0]["text"].startswith("Noted: by name")


async def test_redelivered_update_is_not_answered_twice(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_message(ALICE, "once only")
        await telegram.wait_for_sent(ALICE, 1)
        telegram.redeliver(update["update_id"])
        telegram.push_message(ALICE, "second")
        await telegram.wait_for_sent(ALICE, 2)
        await all_quiet(gateway, telegram)
    texts = [m["text"] for m in telegram.sent_messages(ALICE)]
    assert len(texts) == 2
    assert [r.last_user_text for r in anthropic.requests] == ["once only", "second"]


async def test_long_user_message_split_by_telegram_is_one_turn(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    paste = " ".join(f"word{i}" for i in range(1500))  # about 10,000 characters: 3 pieces
    async with run_gateway(telegram=telegram) as gateway:
        telegram.push_message(ALICE, paste)
        await telegram.wait_for_sent(ALICE, 1)
        await all_quiet(gateway, telegram)
    assert len(telegram.sent_messages(ALICE)) == 1
    assert len(anthropic.requests) == 1
    assert anthropic.requests[0].last_user_text.split() == paste.split()


async def test_new_starts_a_fresh_session_and_keeps_the_old_one(
    run_gateway: GatewayFactory, telegram: TelegramEmulator
) -> None:
    async with run_gateway(telegram=telegram) as gateway:
        telegram.push_message(ALICE, "remember this")
        await telegram.wait_for_sent(ALICE, 1)
        telegram.push_message(ALICE, "/new")
        sent = await telegram.wait_for_sent(ALICE, 2)
        sessions = await gateway.app.repo.list_sessions(key=f"telegram:{ALICE}")
    assert sent[1]["text"].startswith("Started a new session")
    assert sorted(s.active for s in sessions) == [False, True]


async def test_stop_cancels_the_running_turn_and_the_session_carries_on(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    anthropic.inject_fault("slow", delay=3)
    async with run_gateway(telegram=telegram) as gateway:
        slow = telegram.push_message(ALICE, "think hard")
        await wait_until(lambda: (ALICE, "typing") in telegram.chat_actions)
        telegram.push_message(ALICE, "/stop")
        sent = await telegram.wait_for_sent(ALICE, 1)
        telegram.push_message(ALICE, "next question")
        sent = await telegram.wait_for_sent(ALICE, 2)
        record = await settled_inbound(
            gateway, "telegram", f"{ALICE}:{slow['message']['message_id']}"
        )
        runtime = await gateway.app.sessions.get(alice_address())
        stored = await gateway.app.repo.load_context(runtime.session_id)
    assert sent[0]["text"] == STOPPED_TEXT
    assert sent[1]["text"].startswith("Noted: next question")
    assert len(telegram.sent_messages(ALICE)) == 2
    assert record.status == "done"
    assert [m["role"] for m in stored][-1] == "assistant"


async def test_compress_and_usage_commands_answer_in_the_chat(
    run_gateway: GatewayFactory, telegram: TelegramEmulator
) -> None:
    async with run_gateway(telegram=telegram):
        for n in range(3):
            telegram.push_message(ALICE, f"fact number {n}")
            await telegram.wait_for_sent(ALICE, n + 1)
        telegram.push_message(ALICE, "/compress facts")
        await telegram.wait_for_sent(ALICE, 4)
        telegram.push_message(ALICE, "/usage")
        sent = await telegram.wait_for_sent(ALICE, 5)
    assert sent[3]["text"].startswith(("Compacted:", "Nothing to compact"))
    assert sent[4]["text"].startswith("Usage of session #1 (3 API calls)")
