"""No turn ends in silence: an empty or cut-off model answer is asked for again once, then the
user is told; the message ends answered either way."""

from __future__ import annotations

import pytest

from agent.loop import NO_ANSWER_NOTICE
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, GatewayFactory, settled_inbound


@pytest.mark.parametrize("fault", ["truncated", "cut"])
async def test_a_stream_cut_off_after_message_start_is_asked_for_again_and_answered(
    run_gateway: GatewayFactory,
    telegram: TelegramEmulator,
    anthropic: AnthropicEmulator,
    fault: str,
) -> None:
    anthropic.inject_fault(fault)
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_message(ALICE, "are you awake?")
        [sent] = await telegram.wait_for_sent(ALICE, 1)
        done = await settled_inbound(
            gateway, "telegram", f"{ALICE}:{update['message']['message_id']}"
        )
    assert sent["text"].startswith("Noted: are you awake?")
    assert [r.fault for r in anthropic.requests] == [fault, None]
    assert done.status == "done"


async def test_an_answer_empty_twice_tells_the_user_instead_of_sending_nothing(
    run_gateway: GatewayFactory, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    anthropic.inject_fault("empty")
    anthropic.inject_fault("truncated")
    async with run_gateway(telegram=telegram) as gateway:
        update = telegram.push_message(ALICE, "hello?")
        [sent] = await telegram.wait_for_sent(ALICE, 1)
        done = await settled_inbound(
            gateway, "telegram", f"{ALICE}:{update['message']['message_id']}"
        )
        telegram.push_message(ALICE, "and now?")
        later = await telegram.wait_for_sent(ALICE, 2)
    assert sent["text"] == NO_ANSWER_NOTICE
    assert done.status == "done"
    assert len(anthropic.requests) == 3
    assert later[1]["text"].startswith("Noted: ")
