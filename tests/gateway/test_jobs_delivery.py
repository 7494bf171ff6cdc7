"""A job's answer in a private chat is a recorded bot message of that chat: the delivered-part
probe of a reply resumed after a crash counts it as known and never edits it."""

from __future__ import annotations

from pathlib import Path

from telegram import Bot

from gateway.store.job_records import job_run_id
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory, settled_inbound
from tests.gateway.test_delivery_resume import (
    SESSION_KEY,
    crashed_run,
    pushed,
    received,
    stored_turn,
)

JOB_ANSWER = "Time to stretch!"


async def test_a_resumed_reply_in_doubt_never_overwrites_a_jobs_answer_sent_after_it(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    tmp_path: Path,
) -> None:
    question = pushed(telegram, "tell me a story")
    run_id = job_run_id(1, 1)
    async with crashed_run(tmp_path, anthropic, telegram) as app:
        repo = app.repo
        await received(app, question)
        await stored_turn(app, question.text, question, answer="Once upon a time")
        reply = await repo.plan_reply(
            "telegram",
            [question.platform_message_id],
            ["Once upon a time"],
            session_key=SESSION_KEY,
            chat_id=str(ALICE),
        )
        # Meanwhile a job's run was answered in the same chat, its part recorded.
        await repo.record_inbound(
            "telegram",
            run_id,
            session_key=f"{SESSION_KEY}#job1",
            chat_id=str(ALICE),
            user_id=str(ALICE),
            text="[Scheduled job 1] stretch",
        )
        job_reply = await repo.plan_reply(
            "telegram", [run_id], [JOB_ANSWER], session_key=f"{SESSION_KEY}#job1", chat_id="42"
        )
        async with Bot(telegram.token, base_url=telegram.base_url) as bot:
            sent = await bot.send_message(ALICE, JOB_ANSWER)
        await repo.record_sent_part(job_reply.id, 0, str(sent.message_id), last=True)
        await repo.mark_inbound("telegram", question.platform_message_id, "processing")

    async with run_gateway(telegram=telegram) as gateway:
        await settled_inbound(gateway, "telegram", question.platform_message_id)
        finished = await gateway.app.repo.get_reply(reply.id)
    texts = [m["text"] for m in telegram.sent_messages(ALICE)]
    assert texts == [JOB_ANSWER, "Once upon a time"]
    assert finished is not None and finished.parts[0].platform_message_id != str(sent.message_id)
