"""Switching one session compressor -> lcm -> compressor through ``hermes chat`` loses nothing:
the lossless engine covers what the compressor had already compacted away, and the compressor
takes the lossless summaries as its previous summary afterwards."""

from __future__ import annotations

from pathlib import Path

from agent.engine_loader import load_context_engine
from agent.engines.context_engine import EngineContext
from gateway.store.archive import StoreArchive
from gateway.store.db import open_store
from gateway.store.repository import Repository
from sandbox.anthropic_api import AnthropicEmulator
from tests.integration.conftest import run_cli, write_config
from tests.lcm.conftest import ROOT, lcm_package

WINDOW = 20_000
FILLER = "The team reviews the quarterly inventory report and the shipping schedule again. " * 12
EARLY_FACT = "Keep this in mind: the warehouse code word is plumquist."


def turns(prefix: str, count: int) -> list[str]:
    return [f"{prefix} turn {i}: {FILLER}" for i in range(count)]


async def _state(tmp_path: Path):
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'hermes.db'}")
    try:
        repo = Repository(store)
        [session] = await repo.list_sessions()
        lcm = lcm_package()
        lcm_store = lcm.store.LcmStore(StoreArchive(store))
        return (
            await repo.all_messages(session.id),
            await lcm_store.nodes([session.id]),
            await lcm_store.sources(session.id),
            await repo.list_compactions(session.id),
        )
    finally:
        await store.close()


async def _grep(tmp_path: Path, query: str) -> str:
    """lcm_grep as the engine the host loads would run it on this store."""
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'hermes.db'}")
    try:
        repo = Repository(store)
        [session] = await repo.list_sessions()
        engine = load_context_engine(
            "lcm",
            EngineContext(
                context_length=WINDOW, call_llm=_no_model, archive=StoreArchive(repo.store)
            ),
            project_root=ROOT,
            hermes_home=tmp_path / "home",
        )
        await engine.on_session_start(session.id, engine.state_type())
        return await engine.handle_tool_call("lcm_grep", {"query": query})
    finally:
        await store.close()


async def _no_model(task, messages, max_tokens):
    raise AssertionError("a search never calls the model")


async def test_compressor_to_lcm_and_back_keeps_every_message_reachable(tmp_path):
    emulator = AnthropicEmulator(context_length=WINDOW, reply_tokens=40)
    await emulator.start()
    try:
        compressor = write_config(tmp_path, emulator.base_url, model={"context_length": WINDOW})
        phase_one = [EARLY_FACT, *turns("first", 40)]
        one = await run_cli("chat", "--config", str(compressor), stdin="\n".join(phase_one) + "\n")
        assert one.code == 0, one.stderr
        _, _, _, compactions = await _state(tmp_path)
        assert compactions, "the compressor compacted before the switch"

        (tmp_path / "compressor.yaml").write_text(compressor.read_text())
        lossless = write_config(
            tmp_path,
            emulator.base_url,
            model={"context_length": WINDOW},
            context={"engine": "lcm", "lcm": {"leaf_chunk_tokens": 2_000}},
        )
        phase_two = [*turns("second", 10), "/compress"]
        two = await run_cli("chat", "--config", str(lossless), stdin="\n".join(phase_two) + "\n")
        assert two.code == 0, two.stderr
        stored, nodes, sources, before_three = await _state(tmp_path)
        grep_result = await _grep(tmp_path, "plumquist")

        phase_three = turns("third", 32)
        three = await run_cli(
            "chat",
            "--config",
            str(tmp_path / "compressor.yaml"),
            stdin="\n".join(phase_three) + "\n",
        )
        assert three.code == 0, three.stderr
    finally:
        await emulator.stop()

    assert emulator.stats.rejected_400 == 0
    lcm = lcm_package()
    assert lcm.dag.invariant_violations(nodes, [s.id for s in sources]) == []
    covered = lcm.dag.covered_until(nodes)
    in_context = {m.id for m in stored if m.in_context}
    assert all(s.id <= covered or s.id in in_context for s in sources), (
        "after the lossless compaction every original is covered by a leaf or still in context"
    )
    [fact] = [m for m in stored if m.content == EARLY_FACT]
    assert f"[message {fact.id} |" in grep_result
    assert "not summarised yet" not in grep_result.split(f"[message {fact.id} |")[1].split("\n")[0]

    final, final_nodes, _, compactions = await _state(tmp_path)
    users = [m.content for m in final if m.role == "user" and m.kind == "message"]
    assert users == [*phase_one, *phase_two[:-1], *phase_three]
    assert len(final_nodes) == len(nodes), "the compressor leaves the lossless DAG alone"
    assert len(compactions) > len(before_three), "the compressor compacted again after the switch"
    assert compactions[-1].outcome in ("summarized", "chunked")
