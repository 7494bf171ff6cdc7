"""The lossless engine on a real store: compaction, escalation, stale-task protection, tools,
determinism and configuration. The summary model is the one network edge, given as a function."""

from __future__ import annotations

import pytest

from agent.attachments import AttachmentRef, attachment_part, message_attachments
from agent.engine_loader import load_context_engine
from agent.engines.context_engine import EngineContext
from agent.tokens import cache_message_tokens, count_text_tokens
from agent.types import ProviderError
from gateway.store.archive import StoreArchive
from gateway.store.db import open_store
from gateway.store.repository import Repository
from tests.integration.conftest import run_cli, write_config
from tests.lcm.conftest import ROOT, lcm_package

lcm = lcm_package()
WINDOW = 20_000
SETTINGS = {"leaf_chunk_tokens": 1_500, "condense_fanout": 3, "fresh_tail_count": 6}


async def good_model(task, messages, max_tokens):
    prompt = messages[0]["content"]
    words = " ".join(prompt.split()[-40:])
    return f"## Goal\n- go on\n### Done\n- earlier step\n### In Progress\n- pending {words[:60]}"


async def failing_model(task, messages, max_tokens):
    raise ProviderError("overloaded", status=529, retryable=True)


async def verbose_model(task, messages, max_tokens):
    return "word " * 50_000


@pytest.fixture
async def repo(tmp_path):
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'hermes.db'}")
    yield Repository(store)
    await store.close()


def build(repo, call_llm, tmp_path, **overrides):
    ctx = EngineContext(
        context_length=WINDOW,
        call_llm=call_llm,
        engine_config={**SETTINGS, **overrides},
        archive=StoreArchive(repo.store),
    )
    return load_context_engine("lcm", ctx, project_root=ROOT, hermes_home=tmp_path / "home")


async def new_session(repo, key="cli:test", turns=60, word="alpha"):
    session = await repo.start_new_session(key, platform="cli", chat_id=key)
    context = [{"role": "system", "content": "You are helpful."}]
    for turn in range(turns):
        context.append({"role": "user", "content": f"{word} request {turn}: " + "detail " * 60})
        context.append({"role": "assistant", "content": f"answer {turn}: " + "done " * 40})
    await append(repo, session.id, context)
    return session, context


async def append(repo, session_id, messages):
    ids = await repo.append_messages(
        session_id, messages, [cache_message_tokens(m) for m in messages]
    )
    for message, row_id in zip(messages, ids, strict=True):
        message["_id"] = row_id


async def compact(engine, repo, session_id, context):
    result = await engine.compact(context, trigger="agent")
    if result.outcome != "skipped":
        new_counts = {
            i: cache_message_tokens(m) for i, m in enumerate(result.messages) if "_id" not in m
        }
        record = await repo.apply_compaction(session_id, result, new_counts)
        fresh = [m for m in result.messages if "_id" not in m]
        for message, row_id in zip(fresh, record.new_message_ids, strict=True):
            message["_id"] = row_id
    return result


async def test_compactions_cover_every_message_before_the_tail_exactly_once(repo, tmp_path):
    session, context = await new_session(repo)
    engine = build(repo, good_model, tmp_path)
    await engine.on_session_start(session.id, engine.state_type())

    for round_number in range(3):
        result = await compact(engine, repo, session.id, context)
        context = list(result.messages)
        more = [
            {"role": "user", "content": f"later {round_number} {i} " + "x " * 80} for i in range(30)
        ]
        await append(repo, session.id, more)
        context += more
    result = await compact(engine, repo, session.id, context)

    nodes = await engine.store.nodes([session.id])
    sources = await engine.store.sources(session.id)
    assert lcm.dag.invariant_violations(nodes, [s.id for s in sources]) == []
    tail_ids = {m["_id"] for m in result.messages if m.get("role") != "system" and "_id" in m}
    covered = lcm.dag.covered_until(nodes)
    assert all(s.id <= covered or s.id in tail_ids for s in sources)
    assert result.tokens_after < result.tokens_before
    assert max(n.level for n in nodes) >= 1, "leaves were condensed"


async def test_a_dead_summary_model_still_finishes_with_marked_truncations(repo, tmp_path):
    session, context = await new_session(repo)
    engine = build(repo, failing_model, tmp_path)
    await engine.on_session_start(session.id, engine.state_type())

    result = await compact(engine, repo, session.id, context)

    nodes = await engine.store.nodes([session.id])
    assert result.outcome == "fallback" and result.degraded and result.user_notice
    assert nodes and all(n.mode == "truncated" for n in nodes)
    assert all(lcm.summarize.TRUNCATION_MARKER in n.content for n in nodes)
    assert all(n.token_count < n.source_tokens for n in nodes)


async def test_a_summary_longer_than_its_input_escalates_until_shorter():
    summarizer = lcm.summarize.Summarizer(verbose_model, WINDOW)
    material = "the user asked for the deploy plan and the rollback steps " * 20

    summary = await summarizer.summarize(
        material, count_text_tokens(material), 300, condensed=False
    )

    assert summary.mode == "truncated"
    assert count_text_tokens(summary.text) < count_text_tokens(material)
    assert summary.text.endswith(lcm.summarize.TRUNCATION_MARKER)


async def test_only_the_newest_summary_shows_open_requests(repo, tmp_path):
    session, context = await new_session(repo)
    engine = build(repo, good_model, tmp_path, condense_fanout=50)
    await engine.on_session_start(session.id, engine.state_type())

    result = await compact(engine, repo, session.id, context)

    [summary] = [m for m in result.messages if m.get("_kind") == "summary"]
    blocks = summary["content"].split("[lcm node ")[1:]
    assert len(blocks) >= 2
    assert all("### In Progress" not in block for block in blocks[:-1])
    assert "### In Progress" in blocks[-1]
    assert "may already be done" in summary["content"]


async def test_the_same_store_assembles_the_same_context(repo, tmp_path):
    session, context = await new_session(repo)
    engine = build(repo, good_model, tmp_path)
    await engine.on_session_start(session.id, engine.state_type())
    await compact(engine, repo, session.id, context)

    stored = await repo.load_context(session.id)
    builds = []
    for _ in range(2):
        fresh = build(repo, failing_model, tmp_path)
        await fresh.on_session_start(session.id, fresh.state_type())
        builds.append(await fresh.build_context(await repo.load_context(session.id)))

    plain = [[{k: v for k, v in m.items() if not k.startswith("_")} for m in b] for b in builds]
    assert (
        plain[0]
        == plain[1]
        == [{k: v for k, v in m.items() if not k.startswith("_")} for m in stored]
    )


async def test_grep_describe_and_expand_reach_the_originals(repo, tmp_path):
    session, context = await new_session(repo)
    engine = build(repo, good_model, tmp_path, expand_page_tokens=400)
    await engine.on_session_start(session.id, engine.state_type())
    await compact(engine, repo, session.id, context)
    target = context[11]  # a user message long summarised
    leaf = next(
        n for n in await engine.store.nodes([session.id])
        if n.is_leaf and n.first_message_id <= target["_id"] <= n.last_message_id
    )  # fmt: skip

    found = await engine.handle_tool_call("lcm_grep", {"query": "alpha request 5"})
    described = await engine.handle_tool_call("lcm_describe", {"node_id": leaf.id})
    pages = []
    page = 1
    while True:
        text = await engine.handle_tool_call("lcm_expand", {"node_id": leaf.id, "page": page})
        pages.append(text)
        if "[more:" not in text:
            break
        page += 1

    assert f"[message {target['_id']} |" in found and f"in lcm node {leaf.id}]" in found
    assert f"covers messages {leaf.first_message_id}-{leaf.last_message_id}" in described
    assert leaf.content not in described
    assert len(pages) > 1 and target["content"] in "".join(pages)
    assert all(count_text_tokens(p) < 400 + 120 for p in pages)
    bad = await engine.handle_tool_call("lcm_expand", {"node_id": leaf.id, "page": 999})
    assert "page" in bad and "past" in bad


async def test_all_sessions_search_stays_within_the_same_user(repo, tmp_path):
    old, _ = await new_session(repo, key="telegram:1", turns=3, word="heliotrope")
    await new_session(repo, key="telegram:2", turns=3, word="heliotrope")
    current, _ = await new_session(repo, key="telegram:1", turns=3, word="other")
    engine = build(repo, good_model, tmp_path)
    await engine.on_session_start(current.id, engine.state_type())

    here = await engine.handle_tool_call("lcm_grep", {"query": "heliotrope"})
    everywhere = await engine.handle_tool_call(
        "lcm_grep", {"query": "heliotrope", "all_sessions": True, "scope": "messages"}
    )

    assert "nothing matches" in here
    assert f"session {old.id} |" in everywhere
    assert all(f"session {old.id} |" in line for line in everywhere.splitlines()[1:])


def test_unknown_or_bad_settings_are_clear_errors():
    with pytest.raises(lcm.config.LcmConfigError, match="unknown key"):
        lcm.config.load_settings({"leaf_chunk": 5}, WINDOW)
    with pytest.raises(lcm.config.LcmConfigError, match="condense_fanout"):
        lcm.config.load_settings({"condense_fanout": 1}, WINDOW)
    settings = lcm.config.load_settings({}, WINDOW, summary_context_length=8_000)
    assert settings.threshold == 0.75 and settings.leaf_chunk_tokens == 4_000


async def test_plugins_list_shows_the_lcm_engine(tmp_path):
    config = write_config(tmp_path, "http://127.0.0.1:9", context={"engine": "lcm"})

    result = await run_cli("plugins", "list", "--config", str(config))

    assert result.code == 0, result.stderr
    [line] = [line for line in result.stdout.splitlines() if " lcm " in line]
    assert line.startswith("*") and "project" in line


async def test_a_summarised_photo_is_named_by_expand_and_never_sent_as_bytes(repo, tmp_path):
    session = await repo.start_new_session("cli:photo", platform="cli", chat_id="photo")
    ref = AttachmentRef("photo", "ef" * 32, "image/jpeg", 9, width=1280, height=960)
    photo = {
        "role": "user",
        "content": [attachment_part(ref, b"jpeg-bytes"), {"type": "text", "text": "my cat"}],
    }
    context = [{"role": "system", "content": "You are helpful."}]
    for turn in range(60):
        user = photo if turn == 4 else {"role": "user", "content": f"request {turn}: " + "x " * 60}
        context += [user, {"role": "assistant", "content": f"answer {turn}: " + "done " * 40}]
    await append(repo, session.id, context)
    engine = build(repo, good_model, tmp_path, expand_page_tokens=4_000)
    await engine.on_session_start(session.id, engine.state_type())
    result = await compact(engine, repo, session.id, context)
    leaf = next(
        n for n in await engine.store.nodes([session.id])
        if n.is_leaf and n.first_message_id <= photo["_id"] <= n.last_message_id
    )  # fmt: skip

    text = await engine.handle_tool_call("lcm_expand", {"node_id": leaf.id})

    assert "[image: photo, 1280x960]\nmy cat" in text
    assert "anBlZy1ieXRlcw" not in str(result.messages)  # base64 of the bytes
    stored = [m for m in await repo.all_messages(session.id) if m.id == photo["_id"]]
    assert message_attachments(stored[0].content) == [ref]
