"""``Gateway.wait_idle``: what tests wait for before asserting that nothing more happened.

The gateway runs for real (store, sessions, agent loop, the Anthropic emulator); its platform
is the one-module memo platform, whose sends the test holds back as a slow network would.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gateway.platforms.registry import PLATFORMS, PlatformSpec
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from sandbox.anthropic_api import AnthropicEmulator
from tests.fixtures.memo_platform import HeldSendsAdapter, MemoSettings
from tests.gateway.conftest import memo_config

LOOP_TURNS = 50
"""Turns of the event loop in which a waiter that wrongly thought all idle would return."""
GUARD_SECONDS = 30.0
"""A bound against hangs, never a measurement."""


@pytest.fixture(autouse=True)
def memo_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memo platform registered, on a copy of the registry that the test gives back."""
    monkeypatch.setattr(PLATFORMS, "_specs", dict(PLATFORMS._specs))
    PLATFORMS.register(
        PlatformSpec(
            "memo",
            "Memo",
            "tests.fixtures.memo_platform:HeldSendsAdapter",
            settings_class=MemoSettings,
        )
    )


async def let_other_tasks_run() -> None:
    """Give every other task :data:`LOOP_TURNS` turns of the event loop (no clock involved)."""
    for _ in range(LOOP_TURNS):
        await asyncio.sleep(0)


async def test_wait_idle_does_not_return_while_a_turn_is_running_or_its_reply_is_being_sent(
    tmp_path: Path, anthropic: AnthropicEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = memo_config(tmp_path, anthropic, monkeypatch)
    sending_and_sent_at_return: list[tuple[int, int]] = []

    async with open_app(config) as app:
        gateway = Gateway(app)
        adapter = gateway.adapters["memo"]
        assert isinstance(adapter, HeldSendsAdapter)
        await gateway.start()
        try:
            await gateway.wait_idle(GUARD_SECONDS)  # nothing received yet: idle at once
            await adapter.say("ann", "hello")  # returns once the message is recorded
            waiting = asyncio.create_task(gateway.wait_idle(GUARD_SECONDS))
            waiting.add_done_callback(
                lambda _: sending_and_sent_at_return.append(
                    (adapter.sends_in_progress, adapter.sent.qsize())
                )
            )
            await asyncio.wait_for(adapter.send_waiting.wait(), GUARD_SECONDS)
            await let_other_tasks_run()
            returned_while_sending = waiting.done()
            turn_running = not gateway.workers.idle
            replies_being_sent = gateway.delivery.in_flight.count
            adapter.let_through.set()
            await waiting
            record = await app.repo.get_inbound("memo", "1")
        finally:
            await gateway.stop(grace_seconds=2.0)

    assert not returned_while_sending
    assert (turn_running, replies_being_sent) == (True, 1)
    assert sending_and_sent_at_return == [(0, 1)]
    assert record is not None and record.status == "done"
