"""DAG invariants: every summarised message is covered by exactly one leaf, ranges are
contiguous, depth is bounded and every node is smaller than what it covers."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.lcm.conftest import lcm_package

lcm = lcm_package()
dag = lcm.dag
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _sources(specs: list[tuple[str, int]]) -> list:
    return [
        dag.SourceMessage(index + 1, role, tokens, T0, {"role": role, "content": "x"})
        for index, (role, tokens) in enumerate(specs)
    ]


class PureDag:
    """Builds nodes the way the engine does, with summaries at a fixed share of their input."""

    def __init__(self, fanout: int, budget: int) -> None:
        self.nodes: list = []
        self.fanout, self.budget = fanout, budget

    def _add(self, **fields) -> object:
        node = dag.Node(
            id=len(self.nodes) + 1, session_id=1, first_at=T0, last_at=T0, content="s",
            open_items="", mode="model", parent_id=None, **fields,
        )  # fmt: skip
        self.nodes.append(node)
        return node

    def compact(self, sources: list, boundary: int | None, chunk_tokens: int) -> None:
        for chunk in dag.chunk_for_leaves(
            dag.uncovered_before(sources, self.nodes, boundary), chunk_tokens
        ):
            total = sum(s.tokens for s in chunk)
            self._add(level=0, first_message_id=chunk[0].id, last_message_id=chunk[-1].id,
                      message_count=len(chunk), token_count=max(1, total // 3),
                      source_tokens=total, child_ids=())  # fmt: skip
        while group := dag.plan_condensation(dag.roots(self.nodes), self.fanout, self.budget):
            total = sum(n.token_count for n in group)
            parent = self._add(
                level=max(n.level for n in group) + 1, first_message_id=group[0].first_message_id,
                last_message_id=group[-1].last_message_id,
                message_count=sum(n.message_count for n in group),
                token_count=max(1, total // 2), source_tokens=total,
                child_ids=tuple(n.id for n in group),
            )  # fmt: skip
            ids = {n.id for n in group}
            self.nodes = [
                dag.Node(**{**_fields(n), "parent_id": parent.id}) if n.id in ids else n
                for n in self.nodes
            ]


def _fields(node) -> dict:
    return {name: getattr(node, name) for name in dag.Node.__dataclass_fields__}


message_specs = st.lists(
    st.tuples(st.sampled_from(["user", "assistant", "tool"]), st.integers(5, 900)),
    min_size=1,
    max_size=300,
)


@settings(max_examples=60, deadline=None)
@given(
    specs=message_specs,
    cuts=st.lists(st.integers(0, 300), max_size=8),
    fanout=st.integers(2, 5),
    chunk_tokens=st.integers(200, 3_000),
    budget=st.integers(50, 5_000),
)
def test_repeated_compactions_keep_every_invariant(specs, cuts, fanout, chunk_tokens, budget):
    sources = _sources(specs)
    built = PureDag(fanout, budget)
    for cut in sorted(cuts):
        boundary = sources[cut].id if cut < len(sources) else None
        built.compact(sources, boundary, chunk_tokens)

    assert dag.invariant_violations(built.nodes, [s.id for s in sources]) == []
    covered = dag.covered_until(built.nodes)
    for source in sources:
        holders = [
            n for n in built.nodes
            if n.is_leaf and n.first_message_id <= source.id <= n.last_message_id
        ]  # fmt: skip
        assert len(holders) == (1 if source.id <= covered else 0)


@given(specs=message_specs, chunk_tokens=st.integers(100, 2_000))
def test_leaf_chunks_are_consecutive_and_never_start_on_a_tool_result_within_budget(
    specs, chunk_tokens
):
    sources = _sources(specs)
    chunks = dag.chunk_for_leaves(sources, chunk_tokens)

    assert [s for chunk in chunks for s in chunk] == sources
    for before, after in itertools.pairwise(chunks):
        if after[0].role == "tool":  # a tool group is split only far past the budget
            assert sum(s.tokens for s in before) + after[0].tokens > chunk_tokens * 2
    for chunk in chunks:
        if len(chunk) > 1 and chunk[-1].role != "tool":
            assert sum(s.tokens for s in chunk[:-1]) <= chunk_tokens


def test_a_level_condenses_when_it_reaches_the_fanout_oldest_first():
    built = PureDag(fanout=3, budget=10_000)
    sources = _sources([("user", 100)] * 30)

    built.compact(sources, None, chunk_tokens=100)

    roots = dag.roots(built.nodes)
    assert [n.level for n in roots] == sorted((n.level for n in roots), reverse=True)
    assert all(sum(1 for r in roots if r.level == level) < 3 for level in {r.level for r in roots})
    assert dag.depth(built.nodes) <= dag.depth_bound(30)


def test_a_broken_dag_is_reported():
    built = PureDag(fanout=4, budget=10_000)
    sources = _sources([("user", 100)] * 4)
    built.compact(sources, None, chunk_tokens=100)
    gap = [n for n in built.nodes if n.first_message_id != 2]

    problems = dag.invariant_violations(gap, [s.id for s in sources])

    assert any("starts at source" in p for p in problems)
