"""The lossless engine hands durable facts to the host through the engine contract: its leaf
summary requests ask for them (when the host keeps them) and the compaction result carries
them. The summary model is the Anthropic emulator's summary writer, given as a function."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.engine_loader import load_context_engine
from agent.engines.context_engine import EngineContext
from agent.types import Message
from gateway.store.archive import StoreArchive
from gateway.store.repository import Repository
from sandbox.anthropic_summary import structured_summary
from tests.lcm.conftest import ROOT
from tests.lcm.test_lcm_engine import SETTINGS, WINDOW, append, repo  # noqa: F401 - fixture

FACT = "Please remember that my sister Ingrid lives in Tromsø"


async def emulated_model(task: str, messages: list[Message], max_tokens: int | None) -> str:
    return structured_summary({"messages": messages}, max_tokens or 4_000)


def lcm_engine(repo: Repository, tmp_path: Path, *, collect: bool):  # noqa: F811
    ctx = EngineContext(
        context_length=WINDOW,
        call_llm=emulated_model,
        engine_config=SETTINGS,
        archive=StoreArchive(repo.store),
        collect_durable_facts=collect,
    )
    return load_context_engine("lcm", ctx, project_root=ROOT, hermes_home=tmp_path / "home")


async def session_with_fact(repo: Repository) -> tuple[int, list[Message]]:  # noqa: F811
    session = await repo.start_new_session("cli:facts", platform="cli", chat_id="cli:facts")
    context: list[Message] = [{"role": "system", "content": "You are helpful."}]
    for turn in range(30):
        ask = FACT if turn == 2 else f"request {turn}: " + "detail " * 60
        context.append({"role": "user", "content": ask})
        context.append({"role": "assistant", "content": f"answer {turn}: " + "done " * 40})
    await append(repo, session.id, context)
    return session.id, context


@pytest.mark.parametrize("collect", [True, False])
async def test_lcm_returns_a_fact_of_the_summarised_turns_only_when_asked(
    repo: Repository,  # noqa: F811
    tmp_path: Path,
    collect: bool,
) -> None:
    session_id, context = await session_with_fact(repo)
    engine = lcm_engine(repo, tmp_path, collect=collect)
    await engine.on_session_start(session_id, engine.state_type())

    result = await engine.compact(context, trigger="agent")

    assert result.outcome == "summarized"
    expected = ["My sister Ingrid lives in Tromsø"] if collect else []
    assert result.durable_facts == expected
    assert all("<durable-facts>" not in str(m.get("content")) for m in result.messages)
