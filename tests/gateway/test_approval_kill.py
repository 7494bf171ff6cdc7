"""The real daemon killed (SIGKILL) while an approval prompt waits: after the restart the
resumed turn asks again, the tool runs only once it is approved, and the old prompt (a bot
message recorded when sent) is never taken for a reply part and overwritten."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import yaml

from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, gateway_config
from tests.gateway.test_daemon_kill import START_TIMEOUT, start_daemon, wait_for

NOTES_SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers" / "notes_server.py"
WRITE = '[[tool:notes__write {"name": "plan", "text": "sell"}]] save my plan'


def prompts(telegram: TelegramEmulator) -> list[dict]:
    """The bot's messages that carry buttons now (prompts waiting for an answer)."""
    return [m for m in telegram.sent_messages(ALICE) if m.get("reply_markup")]


def data_of(prompt: dict, label: str) -> str:
    rows = prompt["reply_markup"]["inline_keyboard"]
    return next(b["callback_data"] for row in rows for b in row if b["text"] == label)


async def test_a_turn_killed_while_asking_asks_again_and_runs_only_when_allowed(
    telegram: TelegramEmulator, anthropic: AnthropicEmulator, tmp_path: Path
) -> None:
    data = gateway_config(tmp_path, anthropic, telegram=telegram).model_dump(mode="json")
    server = {"command": sys.executable, "args": [str(NOTES_SERVER)], "ask": ["write"]}
    data["mcp"] = {"servers": {"notes": server}}
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(data))
    log_path = tmp_path / "daemon.log"

    first = await start_daemon(config_path, log_path)
    try:
        await wait_for(lambda: telegram.calls_of("getUpdates"), START_TIMEOUT)
        telegram.push_message(ALICE, WRITE)
        await wait_for(lambda: prompts(telegram), START_TIMEOUT)
    finally:
        first.send_signal(signal.SIGKILL)
        await first.wait()
    [old] = prompts(telegram)
    old_text = old["text"]

    second = await start_daemon(config_path, log_path)
    try:
        await wait_for(
            lambda: [p for p in prompts(telegram) if p["message_id"] != old["message_id"]],
            START_TIMEOUT,
        )
        [new] = prompts(telegram)  # the old prompt lost its buttons at the start
        assert not any("saved plan" in m["text"] for m in telegram.sent_messages(ALICE))
        telegram.press_button(ALICE, new["message_id"], data_of(new, "Allow once"))
        await wait_for(
            lambda: any("saved plan" in m["text"] for m in telegram.sent_messages(ALICE)), 30.0
        )
    finally:
        second.send_signal(signal.SIGTERM)
        await second.wait()
    texts = [m["text"] for m in telegram.sent_messages(ALICE)]
    assert sum("saved plan" in t for t in texts) == 1, log_path.read_text()
    shown = telegram.message(ALICE, old["message_id"])
    assert shown is not None and "reply_markup" not in shown
    assert shown["text"] == old_text, "its buttons taken away, never overwritten by a reply part"
    # The model was told the first call never ran, then got the approved call's result.
    last = anthropic.requests[-1].body["messages"]
    results = [
        block
        for message in last
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert "interrupted" in str(results[0]["content"])
    assert "saved plan" in str(results[-1]["content"])
