"""The Telegram emulator speaks the Bot API as the real python-telegram-bot client expects it.

Every test drives the real client library (Bot or a polling Application) against the emulator.
"""

from __future__ import annotations

import asyncio
import datetime as dtm
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import pytest
from telegram import Bot, BotCommand, MessageEntity, ReplyParameters, Update
from telegram.constants import ChatAction, ParseMode
from telegram.error import (
    BadRequest,
    Conflict,
    EndPointNotFound,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
)
from telegram.ext import (
    Application,
    ApplicationBuilder,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from sandbox.telegram_api import TelegramEmulator
from sandbox.telegram_markup import format_message_text

ALICE = 42
GROUP = -1001234567890
POLL_TIMEOUT = 1
TRANSCRIPT_TIME = 1_700_000_000  # 2023-11-14, long before the emulator clock
GUARD_SECONDS = 5.0  # generous upper bound so a hang fails the test instead of freezing it


@pytest.fixture
async def emulator() -> AsyncIterator[TelegramEmulator]:
    emu = TelegramEmulator()
    await emu.start()
    try:
        yield emu
    finally:
        await emu.stop()


class EchoBot:
    """A minimal polling bot: echoes text, answers /new, remembers what it handled."""

    def __init__(self) -> None:
        self.handled: list[Update] = []
        self.polling_errors: list[TelegramError] = []

    async def echo(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        self.handled.append(update)
        assert update.message is not None and update.message.text is not None
        await update.message.reply_text(update.message.text, do_quote=False)

    async def new_session(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        self.handled.append(update)
        assert update.message is not None
        await update.message.reply_text("Started a new session.", do_quote=False)

    @asynccontextmanager
    async def running(self, emu: TelegramEmulator) -> AsyncIterator[Application]:
        app = (
            ApplicationBuilder()
            .token(emu.token)
            .base_url(emu.base_url)
            .base_file_url(emu.base_file_url)
            .get_updates_read_timeout(0.5)
            .build()
        )
        app.add_handler(CommandHandler("new", self.new_session))
        app.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, self.echo))
        async with app:
            await app.start()
            assert app.updater is not None
            await app.updater.start_polling(
                poll_interval=0, timeout=POLL_TIMEOUT, error_callback=self.polling_errors.append
            )
            try:
                yield app
            finally:
                await app.updater.stop()
                await app.stop()


async def test_echo_bot_answers_a_private_message_over_real_polling(
    emulator: TelegramEmulator,
) -> None:
    echo = EchoBot()
    async with echo.running(emulator):
        pushed = emulator.push_message(ALICE, "hello there")
        sent = await emulator.wait_for_sent(ALICE, 1)

    assert sent[0]["text"] == "hello there"
    assert sent[0]["from"]["username"] == "hermes_test_bot"
    assert sent[0]["chat"] == {
        "id": ALICE,
        "type": "private",
        "first_name": "Alice",
        "username": "alice",
    }
    assert sent[0]["message_id"] == pushed["message"]["message_id"] + 1  # ids are per chat
    methods = [name for name, _ in emulator.calls]
    assert methods[:3] == ["getMe", "deleteWebhook", "getUpdates"]


async def test_a_pushed_message_can_carry_a_transcript_time_as_its_date(
    emulator: TelegramEmulator,
) -> None:
    echo = EchoBot()
    async with echo.running(emulator):
        emulator.push_message(ALICE, "from an old transcript", date=TRANSCRIPT_TIME)
        emulator.push_message(ALICE, "live")
        await emulator.wait_for_sent(ALICE, 2)

    dated, live = (update.message for update in echo.handled)
    assert dated is not None and live is not None
    assert dated.date == dtm.datetime.fromtimestamp(TRANSCRIPT_TIME, dtm.UTC)
    assert live.date > dated.date  # the default stays the emulator's clock


async def test_a_confirmed_update_is_not_delivered_again_but_redeliver_repeats_it(
    emulator: TelegramEmulator,
) -> None:
    echo = EchoBot()
    async with echo.running(emulator):
        first = emulator.push_message(ALICE, "one")
        await emulator.wait_for_sent(ALICE, 1)
        second = emulator.push_message(ALICE, "two")
        await emulator.wait_for_sent(ALICE, 2)
        assert emulator.confirmed_offset > first["update_id"]

        emulator.redeliver(first["update_id"])
        await emulator.wait_for_sent(ALICE, 3)

    handled_ids = [update.update_id for update in echo.handled]
    assert handled_ids == [first["update_id"], second["update_id"], first["update_id"]]
    assert emulator.confirmed_offset == second["update_id"] + 1


async def test_stopping_the_updater_confirms_the_offset_with_an_immediate_poll(
    emulator: TelegramEmulator,
) -> None:
    echo = EchoBot()
    async with echo.running(emulator):
        pushed = emulator.push_message(ALICE, "last words")
        await emulator.wait_for_sent(ALICE, 1)

    final_poll = emulator.calls_of("getUpdates")[-1]
    assert final_poll["timeout"] == 0
    assert final_poll["offset"] == pushed["update_id"] + 1
    assert emulator.confirmed_offset == pushed["update_id"] + 1


async def test_html_reply_is_converted_to_plain_text_and_utf16_entities(
    emulator: TelegramEmulator, bot: Bot
) -> None:
    emulator.push_message(ALICE, "hi")

    message = await bot.send_message(
        ALICE,
        '😀 <b>bold</b> &amp; <i>it<u>alic</u></i> <a href="https://example.com/?a=1&amp;b=2">link</a>'
        ' <pre><code class="language-python">x = 1</code></pre>',
        parse_mode=ParseMode.HTML,
    )

    assert message.text == "😀 bold & italic link x = 1"
    assert [(e.type, e.offset, e.length) for e in message.entities] == [
        (MessageEntity.BOLD, 3, 4),
        (MessageEntity.ITALIC, 10, 6),
        (MessageEntity.UNDERLINE, 12, 4),
        (MessageEntity.TEXT_LINK, 17, 4),
        (MessageEntity.PRE, 22, 5),
    ]
    assert message.entities[3].url == "https://example.com/?a=1&b=2"
    assert message.entities[4].language == "python"
    assert message.parse_entity(message.entities[0]) == "bold"
    assert emulator.sent_messages(ALICE)[0]["parse_mode"] == "HTML"


@pytest.mark.parametrize(
    "markup",
    [
        "<b>never closed",
        "<b><i>crossed</b></i>",
        "<script>alert(1)</script>",
        "1 < 2",
        "fish & chips",
    ],
)
async def test_malformed_html_is_rejected_as_unparseable_entities(
    emulator: TelegramEmulator, bot: Bot, markup: str
) -> None:
    emulator.push_message(ALICE, "hi")

    with pytest.raises(BadRequest, match="Can't parse entities"):
        await bot.send_message(ALICE, markup, parse_mode=ParseMode.HTML)

    assert emulator.sent_messages(ALICE) == []


async def test_markdown_v2_is_parsed_and_unescaped_reserved_characters_are_rejected(
    emulator: TelegramEmulator, bot: Bot
) -> None:
    emulator.push_message(ALICE, "hi")

    message = await bot.send_message(
        ALICE, r"*bold* _it_ `a\`b` done\.", parse_mode=ParseMode.MARKDOWN_V2
    )
    with pytest.raises(BadRequest, match=r"Can't parse entities: character '\.' is reserved"):
        await bot.send_message(ALICE, "Done.", parse_mode=ParseMode.MARKDOWN_V2)

    assert message.text == "bold it a`b done."
    assert [(e.type, e.offset, e.length) for e in message.entities] == [
        (MessageEntity.BOLD, 0, 4),
        (MessageEntity.ITALIC, 5, 2),
        (MessageEntity.CODE, 8, 3),
    ]


async def test_message_length_is_counted_in_utf16_units(
    emulator: TelegramEmulator, bot: Bot
) -> None:
    emulator.push_message(ALICE, "hi")
    exactly_full = "😀" * 2048  # 2048 characters, 4096 UTF-16 code units

    accepted = await bot.send_message(ALICE, exactly_full)
    with pytest.raises(BadRequest, match="Message is too long"):
        await bot.send_message(ALICE, exactly_full + "!")
    with pytest.raises(BadRequest, match="Message text is empty"):
        await bot.send_message(ALICE, "  \n ")

    assert accepted.text == exactly_full
    assert len(emulator.sent_messages(ALICE)) == 1


async def test_an_injected_429_surfaces_as_retry_after_and_then_clears(
    emulator: TelegramEmulator, bot: Bot
) -> None:
    emulator.push_message(ALICE, "hi")
    emulator.inject_fault("sendMessage", status=429, retry_after=3)

    with pytest.raises(RetryAfter) as flood:
        await bot.send_message(ALICE, "first try")
    retried = await bot.send_message(ALICE, "second try")

    assert flood.value.retry_after == dtm.timedelta(seconds=3)
    assert retried.text == "second try"


async def test_flood_control_allows_30_messages_a_second_when_enforced() -> None:
    now = [1_700_000_000.0]
    async with TelegramEmulator(clock=lambda: now[0], enforce_rate_limits=True) as emu:
        emu.push_message(ALICE, "hi")
        async with Bot(emu.token, base_url=emu.base_url) as client:
            for index in range(30):
                await client.send_message(ALICE, f"burst {index}")
            with pytest.raises(RetryAfter):
                await client.send_message(ALICE, "one too many")
            now[0] += 1.0
            after_pause = await client.send_message(ALICE, "after a pause")

    assert after_pause.text == "after a pause"
    assert len(emu.sent_messages(ALICE)) == 31


async def test_chat_actions_and_commands_are_recorded(emulator: TelegramEmulator, bot: Bot) -> None:
    emulator.push_message(ALICE, "hi")

    await bot.send_chat_action(ALICE, ChatAction.TYPING)
    await bot.set_my_commands(
        [BotCommand("new", "Start a new session"), BotCommand("usage", "Show usage")]
    )
    stored = await bot.get_my_commands()

    assert emulator.chat_actions == [(ALICE, "typing")]
    assert emulator.commands == [
        {"command": "new", "description": "Start a new session"},
        {"command": "usage", "description": "Show usage"},
    ]
    assert [command.command for command in stored] == ["new", "usage"]
    with pytest.raises(BadRequest, match=r"(?i)BOT_COMMAND_INVALID"):
        await bot.set_my_commands([BotCommand("New-Session", "bad name")])


async def test_editing_replying_and_unknown_chats_follow_telegrams_rules(
    emulator: TelegramEmulator, bot: Bot
) -> None:
    question = emulator.push_message(ALICE, "question")["message"]

    answer = await bot.send_message(
        ALICE, "draft", reply_parameters=ReplyParameters(question["message_id"])
    )
    edited = await bot.edit_message_text(
        "final answer", chat_id=ALICE, message_id=answer.message_id
    )
    with pytest.raises(BadRequest, match="Message is not modified"):
        await bot.edit_message_text("final answer", chat_id=ALICE, message_id=answer.message_id)
    with pytest.raises(BadRequest, match="Message to be replied not found"):
        await bot.send_message(ALICE, "reply", reply_parameters=ReplyParameters(9999))
    with pytest.raises(BadRequest, match="Chat not found"):
        await bot.send_message(12345, "nobody here")

    assert not isinstance(edited, bool) and edited.text == "final answer"
    record = emulator.sent_messages(ALICE)[0]
    assert (record["text"], record["reply_to_message_id"]) == (
        "final answer",
        question["message_id"],
    )


async def test_group_mention_and_addressed_command_reach_the_handlers(
    emulator: TelegramEmulator,
) -> None:
    echo = EchoBot()
    async with echo.running(emulator):
        emulator.push_message(
            GROUP, "@hermes_test_bot what's new?", chat_type="supergroup", chat_title="Team"
        )
        emulator.push_message(GROUP, "/new@hermes_test_bot", chat_type="supergroup", username="bob")
        sent = await emulator.wait_for_sent(GROUP, 2)

    mention_message, command_message = (update.message for update in echo.handled)
    assert mention_message is not None and command_message is not None
    assert mention_message.parse_entities([MessageEntity.MENTION]) == {
        mention_message.entities[0]: "@hermes_test_bot"
    }
    assert mention_message.chat.title == "Team"
    assert command_message.entities[0].type == MessageEntity.BOT_COMMAND
    assert mention_message.from_user is not None and command_message.from_user is not None
    assert mention_message.from_user.id != command_message.from_user.id
    assert [message["text"] for message in sent] == [
        "@hermes_test_bot what's new?",
        "Started a new session.",
    ]


async def test_a_forum_topic_reply_keeps_the_thread_id(emulator: TelegramEmulator) -> None:
    echo = EchoBot()
    async with echo.running(emulator):
        emulator.push_message(GROUP, "in a topic", chat_type="supergroup", message_thread_id=7)
        sent = await emulator.wait_for_sent(GROUP, 1)

    assert sent[0]["message_thread_id"] == 7
    assert sent[0]["is_topic_message"] is True
    assert emulator.calls_of("sendMessage")[0]["message_thread_id"] == 7


async def test_a_stalled_poll_delivers_nothing_until_the_stall_ends(
    emulator: TelegramEmulator,
) -> None:
    echo = EchoBot()
    async with echo.running(emulator):
        emulator.stall_polls(1.0)
        emulator.push_message(ALICE, "are you there?")
        # The open poll has seen the update and held it back: an unstalled one would have
        # answered with it instead.
        await emulator.wait_for_withheld_polls(1, GUARD_SECONDS)
        handled_during_stall = len(echo.handled)
        waiting_during_stall = emulator.webhook_info()["pending_update_count"]
        sent = await emulator.wait_for_sent(ALICE, 1)

    assert (handled_during_stall, waiting_during_stall) == (0, 1)
    assert sent[0]["text"] == "are you there?"


async def test_faults_and_drops_for_one_chat_leave_the_other_chats_alone(
    emulator: TelegramEmulator, bot: Bot
) -> None:
    other = ALICE + 1
    for chat in (ALICE, other):
        emulator.push_message(chat, "hi", user_id=chat)
    emulator.inject_fault("sendMessage", status=403, chat_id=ALICE)
    emulator.drop_connections("sendMessage", chat_id=ALICE)

    to_other = await bot.send_message(other, "you first")
    with pytest.raises(NetworkError):  # a planned drop comes before a planned error
        await bot.send_message(ALICE, "lost in transit")
    await bot.send_message(other, "still fine")
    with pytest.raises(Forbidden, match="blocked"):
        await bot.send_message(ALICE, "refused")
    to_alice = await bot.send_message(ALICE, "at last")

    assert to_other.text == "you first"
    assert [m["text"] for m in emulator.sent_messages(other)] == ["you first", "still fine"]
    assert [m["text"] for m in emulator.sent_messages(ALICE)] == [to_alice.text]


async def test_a_dropped_connection_is_a_network_error_and_polling_recovers(
    emulator: TelegramEmulator, bot: Bot
) -> None:
    emulator.push_message(ALICE, "hi")
    emulator.drop_connections("sendMessage")
    with pytest.raises(NetworkError):
        await bot.send_message(ALICE, "lost in transit")

    echo = EchoBot()
    emulator.drop_connections("getUpdates")
    async with echo.running(emulator):
        sent = await emulator.wait_for_sent(ALICE, 1)

    assert any(isinstance(error, NetworkError) for error in echo.polling_errors)
    assert [message["text"] for message in sent] == ["hi"]


async def test_a_second_poller_terminates_the_first_with_conflict(
    emulator: TelegramEmulator,
) -> None:
    first = Bot(emulator.token, base_url=emulator.base_url)
    second = Bot(emulator.token, base_url=emulator.base_url)
    async with first, second:
        waiting = asyncio.create_task(first.get_updates(timeout=30))
        await emulator.wait_for_calls("getUpdates", 1)
        await second.get_updates(timeout=0)
        with pytest.raises(Conflict):
            await asyncio.wait_for(waiting, GUARD_SECONDS)


async def test_stop_answers_an_abandoned_long_poll_at_once() -> None:
    emu = TelegramEmulator()
    await emu.start()
    async with Bot(emu.token, base_url=emu.base_url) as client:
        polling = asyncio.create_task(client.get_updates(timeout=30, read_timeout=60))
        await emu.wait_for_calls("getUpdates", 1)
        await asyncio.wait_for(emu.stop(), GUARD_SECONDS)
        updates = await asyncio.wait_for(polling, GUARD_SECONDS)

    assert updates == ()


async def test_wrong_token_and_unknown_method_get_telegrams_errors(
    emulator: TelegramEmulator,
) -> None:
    impostor = Bot("999:WRONG", base_url=emulator.base_url)
    try:
        with pytest.raises(InvalidToken):
            await impostor.initialize()  # initialize() verifies the token with getMe
    finally:
        await impostor.shutdown()
    async with Bot(emulator.token, base_url=emulator.base_url) as client:
        with pytest.raises(EndPointNotFound):
            await client.do_api_request("sendTelepathy", api_kwargs={"chat_id": ALICE})
        emulator.push_message(ALICE, "hi")
        emulator.inject_fault("sendMessage", status=403)
        with pytest.raises(Forbidden, match="bot was blocked"):
            await client.send_message(ALICE, "hello?")


async def test_a_long_paste_arrives_as_several_messages(
    emulator: TelegramEmulator, bot: Bot
) -> None:
    first = emulator.push_message(ALICE, "word " * 1000)  # 5000 characters

    updates = await bot.get_updates(timeout=0)

    assert [update.update_id for update in updates] == [first["update_id"], first["update_id"] + 1]
    texts = [update.message.text or "" for update in updates if update.message]
    assert all(len(text) <= 4096 for text in texts)
    assert " ".join(texts) == ("word " * 1000).strip()


async def test_json_multipart_and_query_string_requests_are_understood(
    emulator: TelegramEmulator,
) -> None:
    emulator.push_message(ALICE, "hi")
    api = f"{emulator.base_url}{emulator.token}"
    form = aiohttp.FormData()
    form.add_field("chat_id", str(ALICE))
    form.add_field("text", "from a multipart form")
    async with aiohttp.ClientSession() as http:
        as_json = await (
            await http.post(
                f"{api}/sendMessage",
                json={"chat_id": ALICE, "text": "<i>from JSON</i>", "parse_mode": "HTML"},
            )
        ).json()
        as_multipart = await (await http.post(f"{api}/sendMessage", data=form)).json()
        as_query = await (await http.get(f"{api}/GETME")).json()  # names are case-insensitive

    assert as_json["result"]["entities"] == [{"type": "italic", "offset": 0, "length": 9}]
    assert as_multipart["result"]["text"] == "from a multipart form"
    assert as_query == {"ok": True, "result": as_query["result"]}
    assert as_query["result"]["username"] == "hermes_test_bot"


@pytest.mark.parametrize(
    ("markup", "parse_mode", "text", "entities"),
    [
        (
            '<tg-spoiler>s</tg-spoiler> <a href="tg://user?id=5">Bo</a>',
            "HTML",
            "s Bo",
            [
                {"type": "spoiler", "offset": 0, "length": 1},
                {
                    "type": "text_mention",
                    "offset": 2,
                    "length": 2,
                    "user": {"id": 5, "is_bot": False, "first_name": "User"},
                },
            ],
        ),
        (
            "<blockquote expandable>long</blockquote>",
            "HTML",
            "long",
            [{"type": "expandable_blockquote", "offset": 0, "length": 4}],
        ),
        (
            ">quoted\n>lines\nafter \\[x\\] [site](https://e.com/a\\)b)",
            "MarkdownV2",
            "quoted\nlines\nafter [x] site",
            [
                {"type": "blockquote", "offset": 0, "length": 12},
                {"type": "text_link", "offset": 23, "length": 4, "url": "https://e.com/a)b"},
            ],
        ),
        (
            "```python\nprint(1)\n```",
            "MarkdownV2",
            "print(1)",
            [{"type": "pre", "offset": 0, "length": 8, "language": "python"}],
        ),
        (
            "*b* _i_",
            "Markdown",
            "b i",
            [
                {"type": "bold", "offset": 0, "length": 1},
                {"type": "italic", "offset": 2, "length": 1},
            ],
        ),
    ],
)
def test_markup_converts_to_text_and_entities_like_telegram(
    markup: str, parse_mode: str, text: str, entities: list[dict[str, object]]
) -> None:
    assert format_message_text(markup, parse_mode) == (text, entities)


async def test_clients_with_tagged_tokens_are_one_bot_told_apart_in_the_callers(
    emulator: TelegramEmulator,
) -> None:
    emulator.push_message(ALICE, "hi")  # the chat exists once Alice wrote
    async with (
        Bot(emulator.tagged_token("g0"), base_url=emulator.base_url) as first,
        Bot(emulator.tagged_token("g1"), base_url=emulator.base_url) as second,
    ):
        await first.send_message(ALICE, "from the first")
        await second.send_chat_action(ALICE, ChatAction.TYPING)
    impostor = Bot("999:WRONG~g0", base_url=emulator.base_url)
    try:
        with pytest.raises(InvalidToken):
            await impostor.initialize()
    finally:
        await impostor.shutdown()
    callers = [(tag, method) for tag, method, _ in emulator.callers]
    assert ("g0", "sendMessage") in callers
    assert ("g1", "sendChatAction") in callers
    assert all(tag in {"g0", "g1"} for tag, _ in callers)  # the impostor's call is not the bot's
    assert [m["text"] for m in emulator.sent_messages(ALICE)] == ["from the first"]
