"""Large tool results against the real store: kept whole, the context gets head, note and
tail, the model pages through all of it, and only its own session can read it."""

from __future__ import annotations

import json

from agent.engines.toolkit.tool_output_pruning import (
    PRUNED_INPUT_KEY,
    prune_tool_outputs,
    pruned_placeholder,
)
from agent.tokens import count_text_tokens
from agent.tools import Tool, ToolRegistry
from agent.tools.tool_output import ToolOutputs
from gateway.store.repository import Repository

LIMIT = 1000
BIG = "\n".join(f"line {n}: the quick brown fox jumps over the lazy dog" for n in range(2000))


async def _big(args: dict) -> str:
    return BIG


def registry(repo: Repository, session_id: int) -> ToolRegistry:
    outputs = ToolOutputs(repo, session_id, LIMIT)
    tools = ToolRegistry([Tool("dump", "", {"type": "object"}, _big)], clip=outputs.clip)
    tools.add(outputs.tool())
    return tools


async def test_a_large_result_is_clipped_with_a_ref_and_paged_through_whole(
    repo: Repository,
) -> None:
    session = await repo.get_or_create_session("telegram:1", platform="telegram", chat_id="1")
    tools = registry(repo, session.id)
    clipped = await tools.call("dump", {})
    assert count_text_tokens(clipped) <= LIMIT * 1.2
    assert clipped.startswith("line 0: ") and clipped.endswith(
        "line 1999: the quick brown fox jumps over the lazy dog"
    )
    assert "is kept as ref 1: call tool_output" in clipped
    pages = int(clipped.split(" pages)")[0].rsplit("characters, ", 1)[1])
    read = []
    for page in range(1, pages + 1):
        text = await tools.call("tool_output", {"ref": 1, "page": page})
        header, body = text.split("\n", 1)
        assert header == f"[output 1, page {page} of {pages}]"
        read.append(body)
    assert "".join(read) == BIG, "no tool output is ever lost"
    assert (await tools.call("tool_output", {"ref": 1, "page": pages + 1})).startswith("Error:")


async def test_another_session_cannot_read_the_output(repo: Repository) -> None:
    first = await repo.get_or_create_session("telegram:1", platform="telegram", chat_id="1")
    other = await repo.get_or_create_session("telegram:2", platform="telegram", chat_id="2")
    await registry(repo, first.id).call("dump", {})
    refused = await registry(repo, other.id).call("tool_output", {"ref": 1, "page": 1})
    assert refused == "Error: no kept tool output 1 in this conversation"


async def test_a_result_that_fits_is_given_as_it_is(repo: Repository) -> None:
    outputs = ToolOutputs(repo, 1, LIMIT)
    assert await outputs.clip("dump", "small") == "small"


async def test_a_cleared_result_is_read_again_by_its_call_id(repo: Repository) -> None:
    session = await repo.get_or_create_session("telegram:1", platform="telegram", chat_id="1")
    other = await repo.get_or_create_session("telegram:2", platform="telegram", chat_id="2")
    call = {"id": "toolu_9", "type": "function", "function": {"name": "dump", "arguments": "{}"}}
    original = {"role": "tool", "tool_call_id": "toolu_9", "content": BIG}
    cleared = {**original, "content": pruned_placeholder("dump", "toolu_9", BIG)}
    asked = {"role": "assistant", "content": None, "tool_calls": [call]}
    await repo.append_messages(session.id, [asked, original], [10, 10])
    await repo.append_messages(session.id, [cleared], [10], kind="derived")  # a cleared copy
    assert 'tool_output {"call": "toolu_9"}' in cleared["content"]

    tools = registry(repo, session.id)
    first = await tools.call("tool_output", {"call": "toolu_9", "page": 1})
    header, body = first.split("\n", 1)
    assert header.startswith("[result of call toolu_9, page 1 of ")
    assert BIG.startswith(body) and len(body) > 1000
    assert (await registry(repo, other.id).call("tool_output", {"call": "toolu_9", "page": 1})) == (
        "Error: no tool call toolu_9 in this conversation"
    )
    assert (await tools.call("tool_output", {"page": 1})).startswith("Error: give ref")


async def test_a_cleared_call_input_is_read_again_whole_by_its_call_id(repo: Repository) -> None:
    session = await repo.get_or_create_session("telegram:1", platform="telegram", chat_id="1")
    other = await repo.get_or_create_session("telegram:2", platform="telegram", chat_id="2")
    arguments = json.dumps({"name": "plan.md", "text": BIG})
    call = {
        "id": "toolu_7",
        "type": "function",
        "function": {"name": "write", "arguments": arguments},
    }
    asked = {"role": "assistant", "content": "Writing the plan.", "tool_calls": [call]}
    done = {"role": "tool", "tool_call_id": "toolu_7", "content": "saved plan.md"}
    await repo.append_messages(session.id, [asked, done], [10, 10])
    [cleared] = prune_tool_outputs([asked, done], 0, 2)[:1]
    await repo.append_messages(session.id, [cleared], [10], kind="derived")  # the cleared copy
    placeholder = json.loads(cleared["tool_calls"][0]["function"]["arguments"])
    assert placeholder == {
        PRUNED_INPUT_KEY: f'{len(arguments):,} chars; tool_output {{"call": "toolu_7", '
        '"part": "input"} reads it'
    }

    tools = registry(repo, session.id)
    pages, read = 1, []
    while True:
        text = await tools.call("tool_output", {"call": "toolu_7", "part": "input", "page": pages})
        header, body = text.split("\n", 1)
        assert header.startswith(f"[input of call toolu_7, page {pages} of ")
        read.append(body)
        if header.endswith(f"of {pages}]"):
            break
        pages += 1
    assert "".join(read) == arguments, "a cleared input is never lost"
    assert (await tools.call("tool_output", {"call": "toolu_7", "page": 1})).endswith(
        "saved plan.md"
    )
    refused = await registry(repo, other.id).call(
        "tool_output", {"call": "toolu_7", "part": "input"}
    )
    assert refused == "Error: no tool call toolu_7 in this conversation"
    assert (await tools.call("tool_output", {"call": "toolu_7", "part": "both"})) == (
        'Error: part must be "output" or "input"'
    )
