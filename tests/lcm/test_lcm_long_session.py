"""Acceptance: a 500-turn conversation through ``hermes chat`` with the lossless engine in a
small window. Every planted fact is found by ``lcm_grep`` and reopened by ``lcm_expand`` from the
node that covers it; requests stay under the threshold; nothing is lost; assembly is stable."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import text

from agent.engine_loader import load_context_engine
from agent.engines.context_engine import EngineContext
from gateway.store.archive import StoreArchive
from gateway.store.db import open_store
from gateway.store.repository import Repository
from sandbox.anthropic_api import AnthropicEmulator
from tests.integration.conftest import run_cli, write_config
from tests.lcm.conftest import ROOT

WINDOW = 20_000
THRESHOLD = 0.75
MARGIN = 2_000
TURNS = 500
FACT_TURNS = [12 + 24 * k for k in range(20)]
LCM_SETTINGS = {
    "threshold": THRESHOLD,
    "leaf_chunk_tokens": 2_000,
    "condense_fanout": 4,
    "fresh_tail_count": 12,
    "fresh_tail_tokens": 3_000,
    "leaf_summary_tokens": 400,
    "condensed_summary_tokens": 600,
}
FILLER = "We keep going over the rollout checklist for the payments gateway, step by step. " * 7


def fact_word(k: int) -> str:
    return f"zorblax{k}q"


def fact_text(k: int) -> str:
    return f"Keep this in mind: the locker {fact_word(k)} holds the spare key number {4000 + k}."


def script() -> list[str]:
    lines = []
    for turn in range(TURNS):
        if turn in FACT_TURNS:
            lines.append(fact_text(FACT_TURNS.index(turn)))
        else:
            lines.append(f"turn {turn}: {FILLER}")
    return lines


async def _open(tmp_path: Path):
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'hermes.db'}")
    return store, Repository(store)


async def _fact_locations(tmp_path: Path) -> dict[int, tuple[int, int]]:
    """For each fact: its message id and the leaf node covering it."""
    store, repo = await _open(tmp_path)
    try:
        [session] = await repo.list_sessions()
        stored = await repo.all_messages(session.id)
        ids = {m.content: m.id for m in stored if m.role == "user" and m.kind == "message"}
        async with store.engine.connect() as connection:
            leaves = (
                await connection.execute(
                    text(
                        "SELECT id, first_message_id, last_message_id FROM lcm_nodes "
                        "WHERE level = 0"
                    )
                )
            ).all()
    finally:
        await store.close()
    found = {}
    for k in range(len(FACT_TURNS)):
        message_id = ids[fact_text(k)]
        [leaf] = [
            row.id for row in leaves if row.first_message_id <= message_id <= row.last_message_id
        ]
        found[k] = (message_id, leaf)
    return found


async def _tool_results(tmp_path: Path, name: str) -> list[str]:
    store, repo = await _open(tmp_path)
    try:
        [session] = await repo.list_sessions()
        stored = await repo.all_messages(session.id)
    finally:
        await store.close()
    return [
        str(m.content) for m in stored if m.role == "tool" and (m.extra or {}).get("name") == name
    ]


async def test_500_turns_every_fact_is_found_and_reopened_and_nothing_is_lost(tmp_path):
    emulator = AnthropicEmulator(context_length=WINDOW, reply_tokens=40)
    await emulator.start()
    try:
        config = write_config(
            tmp_path,
            emulator.base_url,
            model={"context_length": WINDOW},
            context={"engine": "lcm", "lcm": LCM_SETTINGS},
        )
        lines = script()
        greps = [f'[[tool:lcm_grep {{"query": "{fact_word(k)}"}}]]' for k in range(len(FACT_TURNS))]
        first = await run_cli(
            "chat", "--config", str(config), stdin="\n".join(lines + greps) + "\n"
        )
        assert first.code == 0, first.stderr
        locations = await _fact_locations(tmp_path)
        expands = [f'[[tool:lcm_expand {{"node_id": {leaf}}}]]' for _, leaf in locations.values()]
        second = await run_cli("chat", "--config", str(config), stdin="\n".join(expands) + "\n")
        assert second.code == 0, second.stderr
    finally:
        await emulator.stop()

    assert emulator.stats.rejected_400 == 0
    chat = [r for r in emulator.requests if "structured summary" not in (r.last_user_text or "")]
    assert max(r.prompt_tokens or 0 for r in chat) < WINDOW * THRESHOLD + MARGIN
    summaries = [r for r in emulator.requests if "structured summary" in (r.last_user_text or "")]
    assert len(summaries) >= 20, "many leaves and condensations were written"

    grep_results = await _tool_results(tmp_path, "lcm_grep")
    expand_results = await _tool_results(tmp_path, "lcm_expand")
    assert len(grep_results) == len(expand_results) == len(FACT_TURNS)
    for k, (message_id, leaf) in locations.items():
        assert f"[message {message_id} |" in grep_results[k]
        assert f"in lcm node {leaf}]" in grep_results[k]
        assert fact_text(k) in expand_results[k]

    store, repo = await _open(tmp_path)
    try:
        [session] = await repo.list_sessions()
        stored = await repo.all_messages(session.id)
        users = [m.content for m in stored if m.role == "user" and m.kind == "message"]
        assert users == lines + greps + expands
        compactions = await repo.list_compactions(session.id)
        assert sum(c.outcome == "summarized" for c in compactions) >= 5
        context = await repo.load_context(session.id)
        builds = []
        for _ in range(2):
            engine = load_context_engine(
                "lcm",
                EngineContext(
                    context_length=WINDOW,
                    call_llm=_no_model,
                    engine_config=LCM_SETTINGS,
                    archive=StoreArchive(repo.store),
                ),
                project_root=ROOT,
                hermes_home=tmp_path / "home",
            )
            await engine.on_session_start(session.id, engine.state_type())
            builds.append(await engine.build_context(await repo.load_context(session.id)))
    finally:
        await store.close()
    assert json.dumps(_plain(builds[0])) == json.dumps(_plain(builds[1]))
    assert _plain(builds[0]) == _plain(context), "the stored context is what assembly gives"


async def _no_model(task, messages, max_tokens):
    raise AssertionError("building the context must not call the model")


def _plain(messages):
    return [{k: v for k, v in m.items() if not k.startswith("_")} for m in messages]
