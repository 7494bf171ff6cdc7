"""The lossless engine on PostgreSQL: the GIN indexes (core revision 0002, the plugin's
lcm_0001) and the tsvector search serve lcm_grep and lcm_expand exactly as FTS5 does on SQLite."""

from __future__ import annotations

from tests.lcm.test_lcm_engine import build, compact, good_model, new_session


async def test_grep_and_expand_work_on_postgresql(pg_repo, tmp_path):
    session, context = await new_session(pg_repo)
    engine = build(pg_repo, good_model, tmp_path)
    await engine.on_session_start(session.id, engine.state_type())
    await compact(engine, pg_repo, session.id, context)
    target = context[11]
    nodes = await engine.store.nodes([session.id])
    leaf = next(
        n for n in nodes if n.is_leaf and n.first_message_id <= target["_id"] <= n.last_message_id
    )

    found = await engine.handle_tool_call("lcm_grep", {"query": "alpha request 5"})
    summaries = await engine.handle_tool_call(
        "lcm_grep", {"query": "earlier step", "scope": "summaries"}
    )
    expanded = await engine.handle_tool_call("lcm_expand", {"node_id": leaf.id})

    assert f"[message {target['_id']} |" in found and f"in lcm node {leaf.id}]" in found
    assert "[lcm node " in summaries
    assert target["content"] in expanded
