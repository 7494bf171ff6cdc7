"""Operating the bot for friends: admins allow and deny users at run time (stored, surviving a
restart), usage is attributed per user, and a spending limit refuses before any model call.

The real daemon core against the Telegram and Anthropic emulators, with a real SQLite store.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from gateway.config.schema import Config
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from gateway.users.access import DAILY_REFUSAL, day_start
from gateway.users.allowlist import REFUSAL_TEXT
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, gateway_config, message_key, settled_inbound

CAROL = 77  # not in allowed_users
DAVE = 78


async def _send(gateway: Gateway, telegram: TelegramEmulator, user: int, text: str) -> list[str]:
    """``text`` from ``user`` (in their private chat), handled to the end; what the bot sent."""
    before = len(telegram.sent_messages(user))
    name = {ALICE: "alice", CAROL: "carol", DAVE: "dave"}[user]
    update = telegram.push_message(user, text, username=name, first_name=name.title())
    await settled_inbound(gateway, "telegram", message_key(update))
    return [m["text"] for m in telegram.sent_messages(user)[before:]]


def _config(tmp_path: Path, anthropic: AnthropicEmulator, telegram: TelegramEmulator) -> Config:
    return gateway_config(
        tmp_path,
        anthropic,
        telegram=telegram,
        telegram_settings={"allowed_users": [ALICE], "admin_users": [ALICE]},
    )


async def _run(config: Config, steps: Any) -> None:
    async with open_app(config) as app:
        gateway = Gateway(app, hold_seconds=0.05)
        await gateway.start()
        try:
            await steps(gateway)
        finally:
            await gateway.stop(grace_seconds=2.0)


async def test_an_admin_allows_and_denies_users_from_the_chat(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    config = _config(tmp_path, anthropic, telegram)
    seen: dict[str, list[str]] = {}

    async def first_run(gateway: Gateway) -> None:
        seen["carol refused"] = await _send(gateway, telegram, CAROL, "hello?")
        seen["allow"] = await _send(gateway, telegram, ALICE, f"/allow {CAROL}")
        seen["carol answered"] = await _send(gateway, telegram, CAROL, "hello again")
        seen["allow dave"] = await _send(gateway, telegram, ALICE, "/allow @Dave")
        seen["dave answered"] = await _send(gateway, telegram, DAVE, "hi from dave")
        seen["carol tries"] = await _send(gateway, telegram, CAROL, "/allow 99")

    async def after_restart(gateway: Gateway) -> None:
        seen["carol after restart"] = await _send(gateway, telegram, CAROL, "still there?")
        seen["deny"] = await _send(gateway, telegram, ALICE, f"/deny {CAROL}")
        seen["carol denied"] = await _send(gateway, telegram, CAROL, "and now?")

    await _run(config, first_run)
    await _run(config, after_restart)

    assert seen["carol refused"] == [REFUSAL_TEXT.format(user_id=CAROL)]
    assert seen["allow"] == [f"Allowed user {CAROL} on telegram: they can write to the bot now."]
    assert seen["carol answered"][-1].startswith("Noted: hello again")
    assert seen["dave answered"][-1].startswith("Noted: hi from dave")
    assert seen["carol tries"] == ["/allow is for the bot's admins only."]
    assert seen["carol after restart"][-1].startswith("Noted: still there?")
    assert seen["deny"] == [f"Denied user {CAROL} on telegram: their next message is refused."]
    assert seen["carol denied"] == []  # refused (told once already, at the start)
    asked = [r.last_user_text for r in anthropic.requests]
    assert not any("and now?" in text for text in asked)


async def test_a_user_over_the_daily_limit_is_refused_before_any_model_call(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    config = _config(tmp_path, anthropic, telegram)
    config.platforms.telegram.allowed_users = [ALICE, CAROL]
    config.limits.daily_usd_per_user = 0.000_001
    replies: dict[str, list[str]] = {}

    async def steps(gateway: Gateway) -> None:
        replies["first"] = await _send(gateway, telegram, CAROL, "one question")
        calls = len(anthropic.requests)
        replies["second"] = await _send(gateway, telegram, CAROL, "and another")
        assert len(anthropic.requests) == calls  # refused before any model call
        replies["admin"] = await _send(gateway, telegram, ALICE, "admins are exempt")
        spent = await gateway.app.repo.spend_since(day_start(), f"telegram:{CAROL}")
        replies["spent"] = [f"{spent}"]

    await _run(config, steps)
    spent = float(replies["spent"][0])
    assert spent > 0
    assert replies["first"][-1].startswith("Noted: one question")
    assert replies["second"] == [DAILY_REFUSAL.format(spent=spent, limit=0.000_001)]
    assert replies["admin"][-1].startswith("Noted: admins are exempt")


async def test_usage_per_user_matches_the_model_servers_counters(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    config = _config(tmp_path, anthropic, telegram)
    config.platforms.telegram.allowed_users = [ALICE, CAROL]
    rows: dict[str, Any] = {}

    async def steps(gateway: Gateway) -> None:
        for n in range(3):
            await _send(gateway, telegram, ALICE, f"alice {n}")
        await _send(gateway, telegram, CAROL, "carol 0")
        rows.update({r.group: r for r in await gateway.app.repo.usage_by("user", day_start())})
        rows["/usage"] = await _send(gateway, telegram, CAROL, "/usage")

    await _run(config, steps)
    by_user: dict[str, dict[str, int]] = {}
    for request in anthropic.requests:
        user = "alice" if "alice" in request.last_user_text else "carol"
        totals = by_user.setdefault(user, {"input": 0, "output": 0, "calls": 0})
        totals["input"] += int(request.usage.get("input_tokens", 0))
        totals["output"] += int(request.usage.get("output_tokens", 0))
        totals["calls"] += 1
    for user, key in (("alice", f"telegram:{ALICE}"), ("carol", f"telegram:{CAROL}")):
        assert rows[key].calls == by_user[user]["calls"]
        assert rows[key].input_tokens == by_user[user]["input"]
        assert rows[key].output_tokens == by_user[user]["output"]
    assert rows[f"telegram:{ALICE}"].calls == 3
    assert "You (every chat):" in rows["/usage"][-1]


async def test_forget_deletes_a_users_data_after_confirmation_and_nobody_elses(
    tmp_path: Path, telegram: TelegramEmulator, anthropic: AnthropicEmulator
) -> None:
    config = _config(tmp_path, anthropic, telegram)
    config.platforms.telegram.allowed_users = [ALICE, CAROL]
    seen: dict[str, list[str]] = {}
    database = tmp_path / "home" / "hermes.db"

    async def steps(gateway: Gateway) -> None:
        await _send(gateway, telegram, ALICE, "alice keeps this")
        await _send(gateway, telegram, CAROL, "carol secret one")
        await _send(gateway, telegram, CAROL, "carol secret two")
        seen["confirm first"] = await _send(gateway, telegram, CAROL, "/forget confirm")
        seen["ask"] = await _send(gateway, telegram, CAROL, "/forget")
        seen["done"] = await _send(gateway, telegram, CAROL, "/forget confirm")
        seen["afresh"] = await _send(gateway, telegram, CAROL, "hello again")

    await _run(config, steps)
    assert seen["confirm first"] == ["Send /forget first: it says what would be deleted."]
    assert seen["ask"][0].startswith("This deletes everything this bot keeps about you: ")
    assert "1 conversation(s) with 5 message(s)" in seen["ask"][0]
    assert seen["done"][0].startswith("Done: deleted 1 conversation(s), 5 message(s)")
    assert seen["afresh"][-1].startswith("Noted: hello again")
    with sqlite3.connect(database) as db:
        messages = [row[0] for row in db.execute("SELECT content FROM messages")]
        inbound = [row[0] for row in db.execute("SELECT text FROM inbound")]
        usage_users = {row[0] for row in db.execute("SELECT user_key FROM api_usage")}
        searchable = [row[0] for row in db.execute("SELECT body FROM lcm_messages_fts")]
    assert not [text for text in [*messages, *inbound, *searchable] if "secret" in str(text)]
    assert any("alice keeps this" in str(text) for text in messages)
    assert any("alice keeps this" in str(text) for text in searchable)
    assert usage_users == {f"telegram:{ALICE}", f"telegram:{CAROL}"}  # Carol's new message
