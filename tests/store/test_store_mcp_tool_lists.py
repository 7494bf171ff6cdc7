"""The MCP servers' kept tool lists: one per server, replaced as a whole, order kept."""

from __future__ import annotations

from agent.tools.mcp import McpToolInfo
from gateway.store.repository import Repository

READ = McpToolInfo("read", "Read a note.", {"type": "object", "required": ["name"]})
WRITE = McpToolInfo("write", "Write a note.", {"type": "object"})


async def test_a_servers_list_is_kept_in_its_order_and_replaced_as_a_whole(
    repo: Repository,
) -> None:
    assert await repo.load_mcp_tool_lists() == {}
    await repo.save_mcp_tool_list("notes", [WRITE, READ])
    await repo.save_mcp_tool_list("files", [READ])
    assert await repo.load_mcp_tool_lists() == {"notes": [WRITE, READ], "files": [READ]}
    await repo.save_mcp_tool_list("notes", [READ])
    assert (await repo.load_mcp_tool_lists())["notes"] == [READ]
