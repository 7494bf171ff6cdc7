"""An agent at work through the real daemon: Telegram emulator -> gateway -> agent loop ->
Anthropic emulator, with the notes MCP server (the SDK's own server API) as a stdio child.

The model (the emulator's reply function, at the network edge) works on a task step by step,
one tool call a step, as recorded coding-agent sessions do: a turn of 50 steps completes with
the default settings; used outputs are cleared inside the tool loop when the cost model says it
pays (and the request after it reads the unchanged prefix from the cache) and not when it does
not; a cleared output is read back whole; a turn that reaches ``max_iterations`` ends with the
notice, is counted for ``/usage``, and "continue" finishes the work with the context intact."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agent.engines.toolkit.tool_output_pruning import PRUNED_OUTPUT_PREFIX
from gateway.runtime.app import open_app
from gateway.runtime.gateway import Gateway
from gateway.users.access import day_start
from sandbox.anthropic_api import AnthropicEmulator
from sandbox.anthropic_prompt import message_blocks
from sandbox.anthropic_replies import Reply, default_reply, last_user_message, user_text
from sandbox.anthropic_summary import is_summary_request
from sandbox.telegram_api import TelegramEmulator
from tests.gateway.conftest import ALICE, gateway_config, message_key, settled_inbound
from tests.gateway.test_mcp_tools import mcp_config

TASK = re.compile(r"task: (\d+) steps of (\d+) lines")
"""The user's request names how many steps the work takes and how large each output is."""
TURN_WAIT_SECONDS = 120.0
"""Guard against a hang (a 50-step turn on a loaded machine), never a timing assertion."""
FINISHED = "finished after {steps} steps"
POLICY_LOGGER = "agent.policy.scheduler"
DECISION = re.compile(
    r"saves \$([\d.]+) over ~\d+ requests for \$([\d.]+); "
    r"their reads since the last clearing cost \$([\d.]+)"
)
"""The numbers of a decision on clearing inside the turn: saving, rewrite cost, reads paid."""
MARGIN = 1.25


def decision_numbers(text: str) -> tuple[float, float, float]:
    """The saving, the rewrite's cost and the reads already paid that a decision names."""
    numbers = DECISION.search(text)
    assert numbers is not None, text
    saving, cost, waste = (float(n) for n in numbers.groups())
    return saving, cost, waste


class StepModel:
    """Works on the newest task message one tool call a step, then answers.

    The step it is at is read from the request: the ``notes__huge`` calls after the newest
    message naming a task (so a "continue" goes on counting, and a clearing changes nothing).
    Summary requests get the emulator's own summary.
    """

    def __call__(self, body: dict[str, Any]) -> Reply | str:
        messages = body.get("messages", [])
        if is_summary_request(user_text(last_user_message(messages))):
            return default_reply(body)
        task_at, steps, lines = _task(messages)
        done = sum(
            1
            for message in messages[task_at:]
            if message["role"] == "assistant"
            for block in message_blocks(message["content"])
            if block.get("type") == "tool_use"
        )
        if done >= steps:
            return FINISHED.format(steps=steps)
        call = {"type": "tool_use", "id": f"toolu_step{done}", "name": "notes__huge"}
        return Reply(
            content=[
                {"type": "text", "text": f"Step {done + 1}: reading the next part."},
                {**call, "input": {"lines": lines + done}},  # each output its own
            ],
            stop_reason="tool_use",
        )


def _task(messages: list[dict[str, Any]]) -> tuple[int, int, int]:
    """Index, steps and output lines of the newest message that names a task."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index]["role"] != "user":
            continue
        found = TASK.search(user_text(messages[index]))
        if found is not None:
            return index, int(found[1]), int(found[2])
    raise AssertionError("no task in the request")


async def ask(gateway: Gateway, telegram: TelegramEmulator, text: str) -> str:
    """Alice sends ``text``; the last message the bot answered with once handling finished."""
    before = len(telegram.sent_messages(ALICE))
    update = telegram.push_message(ALICE, text)
    await settled_inbound(gateway, "telegram", message_key(update), timeout=TURN_WAIT_SECONDS)
    return [m["text"] for m in telegram.sent_messages(ALICE)[before:]][-1]


def tool_result_texts(record: Any) -> list[str]:
    """The text of every tool_result block of one emulator request, in order."""
    texts = []
    for message in record.body["messages"]:
        for block in message_blocks(message["content"]):
            if block.get("type") == "tool_result":
                content = block.get("content")
                texts.append(
                    content
                    if isinstance(content, str)
                    else "".join(str(b.get("text", "")) for b in message_blocks(content))
                )
    return texts


GatewayFactory = Callable[..., AbstractAsyncContextManager[Gateway]]


@pytest.fixture
def agent_gateway(
    tmp_path: Path, anthropic: AnthropicEmulator, telegram: TelegramEmulator
) -> GatewayFactory:
    """``async with agent_gateway(**agent_settings) as gateway``: a started daemon whose model
    is :class:`StepModel` and whose tools include the notes server."""
    anthropic.reply_fn = StepModel()

    @asynccontextmanager
    async def running(**agent: Any) -> AsyncIterator[Gateway]:
        base = gateway_config(tmp_path, anthropic, telegram=telegram, sections={"agent": agent})
        async with open_app(mcp_config(base), with_tools=True) as app:
            gateway = Gateway(app, hold_seconds=0.05)
            await gateway.start()
            try:
                yield gateway
            finally:
                await gateway.stop()

    return running


async def test_a_fifty_step_tool_turn_completes_with_the_default_settings(
    agent_gateway: GatewayFactory, anthropic: AnthropicEmulator, telegram: TelegramEmulator
) -> None:
    async with agent_gateway() as gateway:
        reply = await ask(gateway, telegram, "task: 50 steps of 8 lines")
        [session] = await gateway.app.repo.list_sessions(key=f"telegram:{ALICE}")
        stored = await gateway.app.repo.all_messages(session.id)

    assert reply == FINISHED.format(steps=50)
    assert all(record.status == 200 for record in anthropic.requests)
    assert len(anthropic.requests) == 51  # fifty steps and the answer
    # Every step's result stored (a clearing stores its shortened copy beside the original).
    assert len({m.tool_call_id for m in stored if m.role == "tool"}) == 50


async def test_used_outputs_are_cleared_inside_the_turn_when_it_pays(
    agent_gateway: GatewayFactory,
    anthropic: AnthropicEmulator,
    telegram: TelegramEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=POLICY_LOGGER)
    async with agent_gateway() as gateway:
        reply = await ask(gateway, telegram, "task: 30 steps of 60 lines")
        [session] = await gateway.app.repo.list_sessions(key=f"telegram:{ALICE}")
        compactions = await gateway.app.repo.list_compactions(session.id)
        usage = await ask(gateway, telegram, "/usage")

    assert reply == FINISHED.format(steps=30)
    decisions = [r.getMessage() for r in caplog.records if "inside the turn" in r.getMessage()]
    paid = [d for d in decisions if ": pays: clearing" in d]
    # Each clearing is stored with its estimate, and /usage sums them for the one who pays.
    assert len(compactions) == len(paid)
    assert all(c.estimated_saving_usd and c.estimated_cost_usd for c in compactions)
    assert f"Used tool outputs cleared inside tool loops: {len(paid)} time(s)" in usage
    assert paid, decisions
    # The decision weighed the saving over the requests left against the rewrite (with the
    # margin), and the reads already paid for clearable outputs against it too.
    saving, cost, waste = decision_numbers(paid[0])
    assert saving > MARGIN * cost > 0 and waste >= cost
    assert {c.trigger for c in compactions} == {"prune"}
    # Cleared inside the turn: a request of it already carries placeholders, never for the
    # newest results, and the turn went on to its answer.
    chats = [r for r in anthropic.requests if r.status == 200]
    first = next(i for i, r in enumerate(chats) if PRUNED_OUTPUT_PREFIX in str(r.body))
    assert 0 < first < len(chats) - 1
    texts = tool_result_texts(chats[first])
    assert any(t.startswith(PRUNED_OUTPUT_PREFIX) for t in texts)
    assert not any(t.startswith(PRUNED_OUTPUT_PREFIX) for t in texts[-3:])
    # The unchanged prefix before the first cleared output was read from the cache.
    usage = chats[first].usage or {}
    assert usage.get("cache_read_input_tokens", 0) > (chats[0].usage or {}).get(
        "cache_creation_input_tokens", 0
    )


async def test_small_outputs_are_not_cleared_when_the_rewrite_would_cost_more(
    agent_gateway: GatewayFactory,
    anthropic: AnthropicEmulator,
    telegram: TelegramEmulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=POLICY_LOGGER)
    async with agent_gateway() as gateway:
        reply = await ask(gateway, telegram, "task: 12 steps of 5 lines")
        [session] = await gateway.app.repo.list_sessions(key=f"telegram:{ALICE}")
        compactions = await gateway.app.repo.list_compactions(session.id)

    assert reply == FINISHED.format(steps=12)
    decisions = [r.getMessage() for r in caplog.records if "inside the turn" in r.getMessage()]
    assert decisions and all("does not pay" in d for d in decisions), decisions
    for text in decisions:
        saving, cost, waste = decision_numbers(text)
        assert saving <= MARGIN * cost or waste < cost
    assert compactions == []
    assert not any(PRUNED_OUTPUT_PREFIX in str(r.body) for r in anthropic.requests)


async def test_a_cleared_output_is_read_back_whole(
    agent_gateway: GatewayFactory, anthropic: AnthropicEmulator, telegram: TelegramEmulator
) -> None:
    async with agent_gateway() as gateway:
        await ask(gateway, telegram, "task: 30 steps of 60 lines")
        cleared = next(
            t
            for r in anthropic.requests
            for t in tool_result_texts(r)
            if t.startswith(PRUNED_OUTPUT_PREFIX)
        )
        call = re.search(r'tool_output \{"call": "([^"]+)"\}', cleared)
        assert call is not None
        anthropic.reply_fn = None  # the emulator's own replies follow directives again
        again = await ask(gateway, telegram, f'[[tool:tool_output {{"call": "{call[1]}"}}]] back')

    assert again.startswith(f"Tool result: [result of call {call[1]}, page 1 of ")
    assert "line 0: the quick brown fox" in again


async def test_a_turn_at_the_step_limit_says_so_and_continue_finishes_the_work(
    agent_gateway: GatewayFactory, anthropic: AnthropicEmulator, telegram: TelegramEmulator
) -> None:
    async with agent_gateway(max_iterations=8) as gateway:
        stopped = await ask(gateway, telegram, "task: 12 steps of 8 lines")
        finished = await ask(gateway, telegram, "continue")
        repo = gateway.app.repo
        [session] = await repo.list_sessions(key=f"telegram:{ALICE}")
        stored = await repo.all_messages(session.id)
        stops = await repo.turn_stops_since(day_start(), f"telegram:{ALICE}")
        usage = await ask(gateway, telegram, "/usage")

    assert "stopped after 8 steps" in stopped and '"continue"' in stopped
    assert finished == FINISHED.format(steps=12)
    assert all(record.status == 200 for record in anthropic.requests)
    # The context stayed whole: every step's result once, the notice stored as the answer.
    assert len({m.tool_call_id for m in stored if m.role == "tool"}) == 12
    assert any(m.role == "assistant" and "stopped after 8 steps" in str(m.content) for m in stored)
    assert stops == 1
    assert "Stopped at the step limit (8 steps, agent.max_iterations): 1 today" in usage


class FileWriter:
    """Writes a long new file in one call (more than the default answer budget), then
    answers with what the tool said."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __call__(self, body: dict[str, Any]) -> Reply | str:
        results = [
            block
            for message in body.get("messages", [])
            for block in message_blocks(message["content"])
            if block.get("type") == "tool_result"
        ]
        if results:
            content = results[-1]["content"]
            return content if isinstance(content, str) else message_blocks(content)[0]["text"]
        call = {"type": "tool_use", "id": "toolu_write", "name": "notes__write"}
        return Reply(
            content=[
                {"type": "text", "text": "Writing the module."},
                {**call, "input": {"name": "module", "text": self.text}},
            ],
            stop_reason="tool_use",
        )


async def test_an_answer_cut_at_max_tokens_is_asked_again_with_room_for_the_whole_call(
    agent_gateway: GatewayFactory, anthropic: AnthropicEmulator, telegram: TelegramEmulator
) -> None:
    text = " ".join(f"line{n}" for n in range(4_000))  # ~8,700 tokens: over 4,096
    anthropic.reply_fn = FileWriter(text)
    async with agent_gateway() as gateway:
        reply = await ask(gateway, telegram, "write the module")
        [session] = await gateway.app.repo.list_sessions(key=f"telegram:{ALICE}")
        stored = await gateway.app.repo.all_messages(session.id)

    assert reply == "saved module"
    first, again = anthropic.requests[0], anthropic.requests[1]
    # The emulator, like the API, stops at max_tokens: the call did not fit and never ran.
    assert (first.max_tokens, first.stop_reason) == (4096, "max_tokens")
    assert again.max_tokens == 16_000 and again.stop_reason == "tool_use"
    assert again.n_messages == first.n_messages, "the cut answer was not kept"
    [call] = [call for m in stored if m.role == "assistant" for call in m.tool_calls or []]
    assert json.loads(call["function"]["arguments"]) == {"name": "module", "text": text}
